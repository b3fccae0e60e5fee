"""core: the vocabulary every other layer shares, with no GPU and no view.

Owns axes and their parsing (``axes``), SI units and their formatting (``units``), sample
statistics (``stats``), the tidy result table and its files (``results``: ResultSet, schema
version, Parquet/CSV/JSON), umprof's errors and exit codes (``errors``), where the shipped
kernels/ and scenarios/ live (``resources``) and the version (``version``).

May import: the standard library, numpy, pandas, pyarrow. Nothing else of umprof's.
"""
