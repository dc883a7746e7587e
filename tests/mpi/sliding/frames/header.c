/*
 * The program around the usage example of sliding.h (its first comment), and
 * around a C example of docs/sliding-runtime.md marked <!-- frame: header -->:
 * tests/test_sliding_examples.py puts the example, as written, where the line
 * EXAMPLE is, in main after MPI_Init. stencil_frame.h gives what it uses (n,
 * tile_bytes, initialize, step) and prints the checksum after sliding_finish.
 */
#include "sliding.h"

#include "frames/stencil_frame.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
EXAMPLE
}
