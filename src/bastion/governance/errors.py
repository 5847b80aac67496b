"""Errors raised while governing a request: who is asking, and may they ask at all.

Every class here is agent-facing (an :class:`~bastion.core.errors.OperationError`): the message
is one line that says what failed and what to do next. It never contains the token, its
claims' values or a key; at most the name of a claim or of a well-known algorithm.

    OperationError
    └── AuthenticationError         the caller's credentials were refused
        ├── MalformedTokenError     not a compact signed JWT, too long, bad base64 or JSON
        ├── TokenAlgorithmError     'none', an algorithm off the allowlist, or not the key's
        ├── UnknownKeyError         the token's key id names no configured key
        ├── TokenHeaderError        a header we must refuse ('crit' extensions)
        ├── TokenSignatureError     the signature does not verify
        ├── TokenExpiredError       'exp' has passed (beyond the allowed clock skew)
        ├── TokenNotYetValidError   'nbf' or 'iat' lies in the future
        ├── TokenIssuerError        issued by someone we do not trust
        ├── TokenAudienceError      meant for another service
        └── TokenClaimsError        a required claim is missing or has the wrong type

Other governance modules add their own classes in their own modules.
"""

from __future__ import annotations

from typing import ClassVar

from bastion.core.errors import OperationError

__all__ = [
    "AuthenticationError",
    "MalformedTokenError",
    "TokenAlgorithmError",
    "TokenAudienceError",
    "TokenClaimsError",
    "TokenExpiredError",
    "TokenHeaderError",
    "TokenIssuerError",
    "TokenNotYetValidError",
    "TokenSignatureError",
    "UnknownKeyError",
]


class AuthenticationError(OperationError):
    """The caller's credentials were refused; nothing was done on their behalf."""

    code: ClassVar[str] = "unauthenticated"


class MalformedTokenError(AuthenticationError):
    """Not a compact signed JWT: wrong shape, too long, bad base64url or JSON, repeated keys."""


class TokenAlgorithmError(AuthenticationError):
    """The header's ``alg`` is ``none``, off the allowlist, or not the algorithm of its key."""


class UnknownKeyError(AuthenticationError):
    """The header's ``kid`` names no configured key (or there is no key for a token without one)."""


class TokenHeaderError(AuthenticationError):
    """The header asks for something Bastion refuses, such as ``crit`` extensions."""


class TokenSignatureError(AuthenticationError):
    """The signature does not verify with the selected key."""


class TokenExpiredError(AuthenticationError):
    """The token's ``exp`` has passed, beyond the allowed clock skew."""


class TokenNotYetValidError(AuthenticationError):
    """The token's ``nbf`` (or ``iat``) lies in the future, beyond the allowed clock skew."""


class TokenIssuerError(AuthenticationError):
    """The token's ``iss`` is not the configured issuer."""


class TokenAudienceError(AuthenticationError):
    """The token's ``aud`` does not name this service."""


class TokenClaimsError(AuthenticationError):
    """A required claim is missing, or a claim has the wrong type or an unknown value."""
