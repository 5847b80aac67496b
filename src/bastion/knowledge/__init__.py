"""Knowledge: workspace files become searchable, citable text.

Ingest, chunking, embedding, the index and its search (``bastion.knowledge.engine``).
"""
