"""The model engines of the probes: what puts a prompt to a model and gives back numbers, knowing nothing of
questionnaires, runs or reports: :mod:`~corpus_audit.probe.models.masked` (masked language models: PLL and
fill-mask), :mod:`~corpus_audit.probe.models.parts` (their work saved in chunks, for resuming),
:mod:`~corpus_audit.probe.models.fill` (the fill stage of the fill-mask probes),
:mod:`~corpus_audit.probe.models.classifier` (text classifiers) and :mod:`~corpus_audit.probe.models.chat` (chat
models behind an OpenAI-compatible endpoint)."""
