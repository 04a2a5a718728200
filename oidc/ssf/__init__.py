"""The OpenID Shared Signals Framework 1.0 transmitter, as Keycloak 26.7 began it: a realm with
the attribute ``ssf.transmitterEnabled`` publishes ``.well-known/ssf-configuration``; a client
with ``ssf.enabled`` is a receiver that manages its one stream under ``ssf/transmitter/`` with
``ssf.manage`` / ``ssf.read`` bearer tokens; CAEP and RISC events become Security Event Tokens
(RFC 8417) signed with the realm's keys, pushed (RFC 8935) or polled (RFC 8936) through the
webhook outbox (docs/decisions/0103-shared-signals-transmitter.md, docs/ssf.md)."""
