"""Job managers: the emulated cluster in network namespaces, job scripts, and failure notification to a running job."""
