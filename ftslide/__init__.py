"""ftslide: ULFM fault tolerance for Open MPI plus spare-node substitution tooling."""

__version__ = "0.1.0"
