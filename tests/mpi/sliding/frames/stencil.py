"""The program around a Python example of docs/sliding-runtime.md marked <!-- frame: stencil -->:
tests/test_sliding_examples.py puts the example, as written, where the line EXAMPLE is (at the end,
top level). This frame gives what the example uses, the names of sliding.h's example:

    rank                  this process's rank in MPI.COMM_WORLD;
    n                     the number of iterations, 40;
    tile_array(dims)      a zero numpy array for the largest tile, halo included, of an 11 x 9 x 7
                          domain split over the rank grid dims (s.dims: tiles differ by a cell; a 2D
                          grid splits x and y);
    initialize(u, cart)   this rank's tile at iteration 0, a function of the global cell, zero halo;
    step(cart, it, u)     kill point "iter=IT", then a halo exchange on cart (Sendrecv of subarray
                          faces: mpi4py raises MPI.Exception on an error) and a 7-point average plus
                          a term that depends on it.

It wraps three methods of sliding.Sliding to learn the example's s, cart and u: register, start and
recover; and finish: once it returned (every worker completed), the workers gather their tiles' sums
to logical rank 0, which adds them in rank order and prints "frame: checksum=0x<bits> value=<sum>".
"""

import struct

import numpy as np
from mpi4py import MPI

import sliding

n = 40
DOMAIN = (11, 9, 7)
rank = MPI.COMM_WORLD.Get_rank()


def tile_cells(cells, parts, c):
    return cells // parts + (c < cells % parts)


def tile_first(cells, parts, c):
    return c * (cells // parts) + min(c, cells % parts)


def tile_array(dims):
    dims = (*dims, 1, 1)[:3]
    return np.zeros(tuple(tile_cells(DOMAIN[d], dims[d], 0) + 2 for d in range(3)))  # coordinate 0: the most


def tile_of(cart):
    """(number of dimensions, cells along x, y, z, first global cell) of this rank's tile on cart."""
    dims, coords = (*cart.dims, 1, 1)[:3], (*cart.coords, 0, 0)[:3]
    return (cart.ndim, tuple(tile_cells(DOMAIN[d], dims[d], coords[d]) for d in range(3)),
            tuple(tile_first(DOMAIN[d], dims[d], coords[d]) for d in range(3)))


def initialize(u, cart):
    _, cells, first = tile_of(cart)
    u[...] = 0
    x, y, z = np.meshgrid(*(np.arange(first[d], first[d] + cells[d]) for d in range(3)), indexing="ij")
    u[1:cells[0] + 1, 1:cells[1] + 1, 1:cells[2] + 1] = ((x * 31 + y * 17 + z * 7) % 23) / 23.0


def face(u, cells, d, index):
    """The face of the tile at ``index`` along dimension d (0 and cells+1: halos; 1 and cells: edges)."""
    starts, sizes = [1, 1, 1], list(cells)
    starts[d], sizes[d] = index, 1
    return MPI.DOUBLE.Create_subarray(list(u.shape), sizes, starts).Commit()


def sweep(cart, it, u):
    ndims, cells, _ = tile_of(cart)
    for d in range(ndims):
        low, high = cart.Shift(d, 1)
        types = [face(u, cells, d, index) for index in (1, cells[d], 0, cells[d] + 1)]
        low_edge, high_edge, low_halo, high_halo = types
        try:
            cart.Sendrecv([u, 1, high_edge], high, d, [u, 1, low_halo], low, d)
            cart.Sendrecv([u, 1, low_edge], low, 3 + d, [u, 1, high_halo], high, 3 + d)
        finally:
            for datatype in types:
                datatype.Free()
    cx, cy, cz = cells
    inner = u[1:cx + 1, 1:cy + 1, 1:cz + 1]
    around = (u[0:cx, 1:cy + 1, 1:cz + 1] + u[2:cx + 2, 1:cy + 1, 1:cz + 1] + u[1:cx + 1, 0:cy, 1:cz + 1]
              + u[1:cx + 1, 2:cy + 2, 1:cz + 1] + u[1:cx + 1, 1:cy + 1, 0:cz] + u[1:cx + 1, 1:cy + 1, 2:cz + 2])
    inner[...] = 0.5 * inner + around / 12.0 + 0.001 * (it % 7)


class _Seen:
    s = None    # the example's Sliding
    cart = None
    u = None    # its first registered array


def step(cart, it, u):
    _Seen.s.killpoint(f"iter={it}")
    sweep(cart, it, u)


def print_checksum(cart, u):
    _, (cx, cy, cz), _ = tile_of(cart)
    total = np.zeros(1)
    total[0] = u[1:cx + 1, 1:cy + 1, 1:cz + 1].sum()
    sums = np.zeros(cart.Get_size()) if cart.Get_rank() == 0 else None
    cart.Gather(total, sums, root=0)
    if cart.Get_rank() == 0:
        value = 0.0
        for part in sums:
            value += part
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        print(f"frame: checksum=0x{bits:016x} value={value!r}", flush=True)


_register, _start, _recover, _finish = (sliding.Sliding.register, sliding.Sliding.start, sliding.Sliding.recover,
                                        sliding.Sliding.finish)


def _seen_register(self, array):
    _Seen.s = self
    _Seen.u = array if _Seen.u is None else _Seen.u
    return _register(self, array)


def _seen_start(self):
    result = _start(self)
    _Seen.cart = result[0]
    return result


def _seen_recover(self):
    result = _recover(self)
    _Seen.cart = result[0]
    return result


def _finish_then_checksum(self):
    _finish(self)
    print_checksum(_Seen.cart, _Seen.u)


sliding.Sliding.register, sliding.Sliding.start = _seen_register, _seen_start
sliding.Sliding.recover, sliding.Sliding.finish = _seen_recover, _finish_then_checksum

EXAMPLE
