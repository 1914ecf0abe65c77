"""The cascade's options (score/cascade.py), in a module of their own so that the command line can name them
without importing numpy."""

#: ``--cascade``: ``auto`` runs the cascade from ``AUTO_MIN_SENTENCES`` distinct kept sentences on (below, the full
#: path costs minutes at most and its statistics need every sentence), ``on`` always, ``off`` never.
CASCADE_MODES = ("auto", "on", "off")
AUTO_MIN_SENTENCES = 50_000
#: ``--cascade-sample``: the share of the kept sentences the encoder reads at random, for the statistics.
DEFAULT_SAMPLE_SHARE = 0.1
