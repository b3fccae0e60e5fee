"""Running one function over many inputs at once: a Dask cluster (a local one sized to the machine, or a
running scheduler's), else a local process pool. Knows nothing of traces: the API hands it its task."""
