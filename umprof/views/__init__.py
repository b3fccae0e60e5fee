"""views: what only presents, never measures or decides.

Owns the terminal tables (``terminal``, rich), the figures (``plots``, matplotlib without a
display) and the self-contained HTML report (``html``).

May import: every layer below (``core``, ``nsight``, ``measure``, ``model``). Nothing below
imports a view.
"""
