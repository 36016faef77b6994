"""Every exception templater raises derives from TemplaterError.

Expected per-page outcomes (not HTML, empty page, no template) are values with a reason, not exceptions.
"""


class TemplaterError(Exception):
    """Base class of every error templater raises; the message says what failed and how to fix it."""


class InputError(TemplaterError):
    """An input file or argument cannot be used (unreadable file, unknown format)."""


class StoreError(TemplaterError):
    """The database cannot be opened, is corrupt, or is locked by another writer."""


class SettingsMismatchError(StoreError):
    """Data made with other settings than those persisted beside the store."""


class RuleError(TemplaterError):
    """A rule is invalid (for example an XPath that does not compile)."""
