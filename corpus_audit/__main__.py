from corpus_audit.cli import main

main()
