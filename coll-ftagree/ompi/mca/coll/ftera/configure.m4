# ftslide: coll/ftera, our Early Returning Agreement. Built only when Open MPI
# is configured with fault tolerance (--with-ft=ulfm), like upstream's ftagree.
AC_DEFUN([MCA_ompi_coll_ftera_CONFIG],[
    AC_CONFIG_FILES([ompi/mca/coll/ftera/Makefile])
    AS_IF([test "$opal_want_ft_mpi" = "1"], [$1], [$2])
])dnl
