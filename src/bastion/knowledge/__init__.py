"""Knowledge: turning workspace files into searchable, citable text (ingest, chunking, embedding)."""
