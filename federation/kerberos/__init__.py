"""Kerberos user federation (Keycloak's ``kerberos`` user storage provider) and SPNEGO sign-in.

The provider needs MIT Kerberos's GSS-API through python-gssapi (the ``kerberos`` extra, built
against ``libkrb5-dev``). Without it the provider is not registered: components of this type are
kept, and their users are refused at sign-in until it is installed (``realms.users.storage``)."""
