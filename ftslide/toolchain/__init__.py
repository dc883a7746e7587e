"""Building things: the C cores (CMake), the cached Open MPI with ULFM, MPI programs with its mpicc, and mpirun."""
