"""Performance figures for ofc: ``python -m bench`` (or ``make bench``) prints them all.

Sections live in their own modules (``bench.core``, ...) and are listed in
``bench.__main__.SECTIONS``; each also runs alone as ``python -m bench.<name>``.
"""
