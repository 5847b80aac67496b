"""The pure domain: paths, mounts, principals, policy, the guard and the store port.

Nothing here imports another part of the package or a third-party library.
"""
