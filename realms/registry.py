"""The one type of every keyed extension point (credential types, sign-in steps, required
actions, login protocols, user storage providers and their validators, front-channel logout,
protocol mappers, background jobs).

An app fills a registry from its ``AppConfig.ready()`` through the owning module's ``register_*``
function, never as a side effect of an import; the code that runs the entries reads it. A
registry is a dict (key: a provider id or a type name) that knows its name, so a test can swap an
entry with ``monkeypatch.setitem`` and a listing reads the same everywhere."""


class Registry(dict):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def add(self, key, entry):
        """Register ``entry`` under ``key`` (a later registration replaces an earlier one, as
        a test's stand-in does); returns the entry."""
        self[key] = entry
        return entry

    def add_instance(self, kind, key_attribute):
        """Register a provider given as a class (instantiated once here) or an instance, under
        its own ``key_attribute``; returns what was given, so it serves as a class decorator."""
        instance = kind() if isinstance(kind, type) else kind
        self.add(getattr(instance, key_attribute), instance)
        return kind

    def by_key(self):
        """The entries, by key."""
        return [self[key] for key in sorted(self)]

    def __repr__(self):
        return f"<Registry {self.name}: {', '.join(sorted(map(str, self)))}>"
