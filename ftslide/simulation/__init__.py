"""Slowdown simulations of spare substitution (issue 4): SimGrid platforms and SMPI runs,
an analytic congestion model, and the sweeps behind ``ftslide simulate``.

Modules: ``network`` (link/node parameters and presets), ``placement`` (grid nodes
to hosts, mappings from the sliding core), ``platform`` (SimGrid XML and hostfiles),
``smpi`` (building and running the SMPI kernels), ``analytic`` (link loads and hops
routed by the one topology model), ``sweep`` (experiments, cache, tables, plots),
``protocols`` (the protocol cores at scale in the SimGrid driver).
"""
