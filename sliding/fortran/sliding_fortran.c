/*
 * sliding_fortran.c -- the C side of the Fortran module `sliding`
 * (sliding.f90): the calls that take an MPI handle or an array of any rank,
 * and the command line as C's argv.
 *
 * Fortran hands communicators over as their integer value (type(MPI_Comm)'s
 * MPI_VAL), which only MPI_Comm_f2c/MPI_Comm_c2f turn into C handles and
 * back: this file does all of that, so the module never assumes what a C
 * handle is (a recovery callback written in Fortran gets cart through
 * call_fortran_callback). An array of any type and rank arrives as a C
 * descriptor (ISO_Fortran_binding.h, Fortran 2018's type(*), dimension(..)):
 * its base address is registered as it is, without a copy, if it is
 * contiguous.
 *
 * Compiled by the user's mpifort together with sliding.f90 (gfortran
 * compiles a .c given on its command line with the matching gcc), against
 * sliding.h ($SLIDING_CFLAGS) and libsliding ($SLIDING_LIBS).
 */
#include <ISO_Fortran_binding.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sliding.h"

/* The optional arguments are NULL when the Fortran caller left them out. */
int sliding_fortran_create(const MPI_Fint *comm, const char *grid, const char *spares, const char *method,
                           const char *block, const int *node_key, const char *node_coords,
                           const char *redundancy, const char *domains, sliding_t **out)
{
    return sliding_create_options(MPI_Comm_f2c(*comm), grid, spares, method, block, node_key, node_coords,
                                  redundancy, domains, out);
}

/* sliding_create_args on the Fortran program's command line: text holds its
 * argc arguments, the program's name first, each ended by a NUL. *first is
 * the index of the first argument after METHOD (argc if there is none), 0 on
 * a failure. Without memory for the argv, sliding_create_args gets none and
 * says SLIDING_ERR_ARG, still with every process (the status is collective). */
int sliding_fortran_create_args(const MPI_Fint *comm, const int *argc, char *text, int *first, sliding_t **out)
{
    char **argv = malloc(sizeof(char *) * (size_t)(*argc + 1));
    for (int i = 0; argv && i < *argc; i++) {
        argv[i] = text;
        text += strlen(text) + 1;
    }
    if (argv) {
        argv[*argc] = NULL;
    }
    int left = *argc;
    *out = NULL;
    int status = sliding_create_args(MPI_Comm_f2c(*comm), &left, &argv, out);
    *first = status == SLIDING_OK ? *argc - left + 1 : 0;
    free(argv);
    return status;
}

/* The whole array, elem_len times its extents in bytes; a strided section is
 * refused (registering it would need a copy that recoveries cannot see). */
int sliding_fortran_register(sliding_t *s, const CFI_cdesc_t *array)
{
    if (array->base_addr == NULL) {
        return SLIDING_ERR_ARG; /* an unallocated array */
    }
    if (!CFI_is_contiguous(array)) {
        return SLIDING_ERR_NOT_CONTIGUOUS;
    }
    size_t bytes = array->elem_len;
    for (int d = 0; d < array->rank; d++) {
        if (array->dim[d].extent < 0) {
            return SLIDING_ERR_ARG; /* an assumed-size array: its size is unknown */
        }
        bytes *= (size_t)array->dim[d].extent;
    }
    return sliding_register(s, array->base_addr, bytes);
}

int sliding_fortran_start(sliding_t *s, MPI_Fint *cart, int *role, int64_t *version)
{
    MPI_Comm c = MPI_COMM_NULL;
    int status = sliding_start(s, &c, role, version);
    *cart = MPI_Comm_c2f(c);
    return status;
}

int sliding_fortran_recover(sliding_t *s, MPI_Fint *cart, int *role, int64_t *version)
{
    MPI_Comm c = MPI_Comm_f2c(*cart);
    int status = sliding_recover(s, &c, role, version);
    *cart = MPI_Comm_c2f(c);
    return status;
}

/* sliding.f90's sliding_recovery_callback: every argument by reference, the
 * runtime as a type(sliding_t) (one pointer), cart as a type(MPI_Comm) (one
 * MPI_Fint). */
typedef int (*fortran_callback)(sliding_t *const *s, const int *old_rank, const int *new_rank, const MPI_Fint *cart);

/* The C callback the runtime calls; arg is the Fortran function, carried as
 * an integer (POSIX lets a function pointer go through void * and back). */
static int call_fortran_callback(sliding_t *s, int old_rank, int new_rank, MPI_Comm cart, void *arg)
{
    fortran_callback callback = (fortran_callback)(uintptr_t)arg;
    MPI_Fint f_cart = MPI_Comm_c2f(cart);
    return callback(&s, &old_rank, &new_rank, &f_cart);
}

int sliding_fortran_on_recovery(sliding_t *s, fortran_callback callback)
{
    if (!callback) {
        return SLIDING_ERR_ARG;
    }
    return sliding_on_recovery(s, call_fortran_callback, (void *)(uintptr_t)callback);
}
