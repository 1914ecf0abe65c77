"""The questionnaires the probes put to models, one module per probe (each a
:class:`~corpus_audit.probe.run.Probe`): :mod:`~corpus_audit.probe.questionnaires.aq27`,
:mod:`~corpus_audit.probe.questionnaires.gender`, :mod:`~corpus_audit.probe.questionnaires.social_distance`,
:mod:`~corpus_audit.probe.questionnaires.sentiment` and :mod:`~corpus_audit.probe.questionnaires.contextual`; with
what they share or lend each other: reading the files (``files``), the AQ-27 items and their prompts
(``aq27_items``, also the contextual probe's explicit arm), the valence of fill words (``valence``), the scenarios
and coding of the contextual probe (``scenarios``, ``coding``). Their data is in ``questionnaires/<lang>/``."""
