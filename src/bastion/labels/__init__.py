"""Document labels, as one part: everything that works out who a document is for.

A document's effective labels are the mount's (or the store's own) labels tightened by the
file's front matter and by its sidecar ``<name>.labels.yaml``. This part holds all of it:

* :mod:`~bastion.labels.frontmatter` — the one front-matter parser (the head of a file);
* :mod:`~bastion.labels.resolve` — the one resolver, :func:`resolve_labels`;
* :mod:`~bastion.labels.sidecars` — what a sidecar change does to its file's labels
  (tightening, joining, writing labels back as a sidecar);
* :mod:`~bastion.labels.settled` — when labels worked out for a version may be kept (not
  while the version is racy: stamped within a tick of the read);
* :mod:`~bastion.labels.store` — :class:`DocumentLabels`, the store wrapper that sets
  ``FileInfo.labels`` on every path, and answers the guard's questions through the label port
  (:class:`bastion.core.label_port.LabelPort`).

It sits below the workspace and knowledge (layer 1: it imports only ``core``); the guard
(``core``) never imports it and asks the port instead. A store knows nothing of labels.
"""
