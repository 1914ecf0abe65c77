"""The model-probe wing: questionnaires put to language models (AQ-27 pseudo-log-likelihood, gendered fill-mask,
social distance, contextual judgements of chat models), and the link from a model's behaviour to the audits of
the corpora it was trained on.

It shares the stages of the house (``stigma``, ``scm``, ``engines``) with the audit wing but never imports
``corpus_audit.audit``, except ``probe/link.py`` reading audit folders through ``corpus_audit.audit.folder``.
Each probe is a :class:`~corpus_audit.probe.run.Probe` in ``questionnaires/`` (one module per probe), run by the one
runner :func:`~corpus_audit.probe.run.run_probe`; the model engines are in ``models/``; its output folder is
described by :mod:`corpus_audit.probe.folder`.
"""
