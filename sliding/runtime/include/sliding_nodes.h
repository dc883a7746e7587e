/*
 * sliding_nodes.h -- the node coordinate file of sliding_create_info(), read
 * without MPI so that a launcher can check it before it starts anything
 * (the Python driver reads it through libslidenames.so).
 *
 * The file names every node of the job once, one node per line, in either
 * form (not mixed):
 *
 *     NAME X Y [Z]    the node's coordinates in the node grid (one per grid
 *                     dimension); every node at its own coordinates
 *     NAME            the node's place in the list is its grid node id
 *                     (row-major, last dimension fastest)
 *
 * NAME is how the job knows the node: its host name (MPI_Get_processor_name)
 * when nodes are the processes that share memory, the decimal node key when
 * the job gives one. Blank lines and lines starting with '#' are skipped;
 * fields are separated by blanks. A real machine's coordinates come from its
 * job manager (a torus's from its allocation), not from the hostfile order.
 *
 * Failure domains. Either form may end with a field `domain=LABEL` on every
 * line (all lines or none): the nodes that fail together (a board, a chassis,
 * a leaf switch) share a LABEL, any non-blank text. Domains are numbered
 * 0, 1, ... in the order their labels first appear in the file.
 *
 *     node017 2 0 1 domain=board4
 */
#ifndef SLIDING_NODES_H
#define SLIDING_NODES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Read the file at `path` for a grid of `ndims` dimensions of sizes[0..2]
 * (sizes[2] = 1 in 2D) whose `nnodes` nodes the job names names[0..nnodes-1]
 * (the job's order). On success grid_node[j] is the grid node id of job node
 * j and the result is SLIDING_OK; otherwise SLIDING_ERR_COORDS (or
 * SLIDING_ERR_ARG for NULL arguments, SLIDING_ERR_NOMEM) and *where says why:
 * the 1-based line at fault (an unknown name, a name or coordinates given
 * twice, coordinates outside the grid or of the wrong count, another form
 * than the first line's, more lines than nodes), -(j + 1) for job node j that
 * the file does not name, 0 when the file cannot be read. Cost
 * O(file size + nnodes^2) string comparisons at worst (once, at creation). */
int sliding_nodes_read(const char *path, int ndims, const int32_t sizes[3], int32_t nnodes,
                       const char *const *names, int32_t *grid_node, int32_t *where);

/* sliding_nodes_read() and the failure domains: on success
 * domain_of_node[n] (nnodes entries, may be NULL) is the domain of GRID node
 * id n and *ndomains (may be NULL) how many labels the file gives, 0 when its
 * lines have no domain field (then every domain_of_node[n] is -1: the caller
 * chooses, e.g. a box shape). Besides sliding_nodes_read()'s, *where names
 * the line of a malformed domain field (`domain=` with no label, or not the
 * last field) and the first line whose domain field is present when the
 * first node line had none, or absent when it had one. sliding_nodes_read()
 * is this function with both NULL: a file with domains reads there too.
 * Cost as sliding_nodes_read() plus O(nnodes x domains) label comparisons. */
int sliding_nodes_read_domains(const char *path, int ndims, const int32_t sizes[3], int32_t nnodes,
                               const char *const *names, int32_t *grid_node, int32_t *domain_of_node,
                               int32_t *ndomains, int32_t *where);

#ifdef __cplusplus
}
#endif

#endif
