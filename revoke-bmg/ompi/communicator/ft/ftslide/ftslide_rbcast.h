/*
 * ftslide_rbcast.h - ftslide's reliable broadcast for ULFM's FT layer.
 *
 * The revoke of a communicator (MPIX_Comm_revoke) is broadcast by our BMG core
 * (bmg.h, revoke-bmg/core of the ftslide repository) in one of its two
 * variants, flooding or lean, as BTL active messages on our own tag
 * (FTSLIDE_RBCAST_BTL_TAG, ftslide_ftnet.h). It is one of the algorithms of the
 * MCA parameter mpi_ft_reliable_bcast, which this file's code registers (as an
 * enum, so that Open MPI refuses an invalid value naming the valid ones):
 *
 *   0 none           no reliable broadcast (revoke stays local)
 *   1 bmg            upstream's binomial-graph diffusion (tag 0x30)
 *   2 full           upstream's all-to-all diffusion (tag 0x30)
 *   3 ftslide_flood  our core, flooding variant (tag 0x32)
 *   4 ftslide_lean   our core, lean variant (tag 0x32); the default
 *
 * Which broadcasts we carry: those without payload, i.e. one-shot signals on
 * a communicator (the revoke). A broadcast with a payload (the failure
 * propagator of comm_ft_propagator.c, off by default: mpi_ft_propagator_with_
 * rbcast) keeps upstream's binomial-graph diffusion, because our core carries
 * an epoch and no data. The hook in comm_ft_reliable_bcast.c
 * (ompi-ulfm/patches/ompi/04-rbcast-ftslide.patch) routes by message size.
 *
 * Hooked in by the same patch: ftslide_rbcast_comm_ready() when a new
 * communicator is activated (replays messages that arrived before it
 * existed here) and ftslide_rbcast_comm_freed() when one is destructed (its
 * state goes, later messages for it are dropped).
 */
#ifndef FTSLIDE_RBCAST_H
#define FTSLIDE_RBCAST_H

#include "ompi_config.h"

BEGIN_C_DECLS

struct ompi_communicator_t;
struct ompi_comm_rbcast_message_t;

/* values of mpi_ft_reliable_bcast */
enum {
    OMPI_COMM_RBCAST_NONE = 0,
    OMPI_COMM_RBCAST_BMG = 1,
    OMPI_COMM_RBCAST_FULL = 2,
    OMPI_COMM_RBCAST_FTSLIDE_FLOOD = 3,
    OMPI_COMM_RBCAST_FTSLIDE_LEAN = 4,
    OMPI_COMM_RBCAST_DEFAULT = OMPI_COMM_RBCAST_FTSLIDE_LEAN
};

/* Hands a delivered broadcast to the FT layer's callback for msg->type
 * (provided by the patched comm_ft_reliable_bcast.c). */
typedef int (*ftslide_rbcast_deliver_fn_t)(struct ompi_communicator_t *comm,
                                           struct ompi_comm_rbcast_message_t *msg);

/* Messages upstream's diffusion (algorithms 1, 2, tag 0x30) has sent here:
 * counted by patch ompi/04 in ompi_comm_rbcast_send_msg(), so that benchmarks
 * compare message counts (MPI_T: mpi_ft_rbcast_messages_sent). */
extern unsigned long long ompi_comm_rbcast_upstream_sent;

/* Registers mpi_ft_reliable_bcast (into *algorithm) and the MPI_T
 * performance variables mpi_ft_ftslide_messages_sent (ours) and
 * mpi_ft_rbcast_messages_sent (upstream's). */
int ftslide_rbcast_register_params(int *algorithm);
/* Starts our transport (BTL tag, failure hook). OMPI_ERR_NOT_SUPPORTED with
 * MPI_THREAD_MULTIPLE (no locking here): the caller falls back to upstream's. */
int ftslide_rbcast_init(int lean, ftslide_rbcast_deliver_fn_t deliver);
int ftslide_rbcast_finalize(void);
/* Broadcasts a message without payload on comm (already delivered here). */
int ftslide_rbcast_bcast(struct ompi_communicator_t *comm, struct ompi_comm_rbcast_message_t *msg);
void ftslide_rbcast_comm_ready(struct ompi_communicator_t *comm);
void ftslide_rbcast_comm_freed(struct ompi_communicator_t *comm);

END_C_DECLS

#endif /* FTSLIDE_RBCAST_H */
