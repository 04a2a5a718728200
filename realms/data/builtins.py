"""Keycloak 26's built-ins of a new realm, as RealmRepresentation JSON fragments.

The importer adds every built-in the file lacks (matched by name), so a realm created from
scratch and a realm imported from a file go through the same code path and end up with the
same clients, roles, client scopes and mappers as in Keycloak. Mapper types and config keys are
Keycloak's own, because the token code reads them from the database.
"""
import copy

ACCOUNT_CLIENT = "account"  # Keycloak's Constants.ACCOUNT_MANAGEMENT_CLIENT_ID

OIDC = "openid-connect"
SAML = "saml"

# Realm-level defaults copied onto new clients of the protocol (Keycloak 26).
DEFAULT_DEFAULT_SCOPES = ["profile", "email", "roles", "web-origins", "acr", "basic", "role_list"]
DEFAULT_OPTIONAL_SCOPES = ["offline_access", "address", "phone", "organization"]

_CLAIM_ALL = {
    "introspection.token.claim": "true",
    "userinfo.token.claim": "true",
    "id.token.claim": "true",
    "access.token.claim": "true",
}


def _attr_mapper(name, attribute, claim, json_type="String"):
    return {
        "name": name,
        "protocol": OIDC,
        "protocolMapper": "oidc-usermodel-attribute-mapper",
        "consentRequired": False,
        "config": {**_CLAIM_ALL, "user.attribute": attribute, "claim.name": claim, "jsonType.label": json_type},
    }


def _mapper(name, mapper_type, config, protocol=OIDC):
    return {"name": name, "protocol": protocol, "protocolMapper": mapper_type, "consentRequired": False, "config": config}


_PROFILE_ATTRIBUTES = [
    ("family name", "lastName", "family_name", "String"),
    ("given name", "firstName", "given_name", "String"),
    ("middle name", "middleName", "middle_name", "String"),
    ("nickname", "nickname", "nickname", "String"),
    ("username", "username", "preferred_username", "String"),
    ("profile", "profile", "profile", "String"),
    ("picture", "picture", "picture", "String"),
    ("website", "website", "website", "String"),
    ("gender", "gender", "gender", "String"),
    ("birthdate", "birthdate", "birthdate", "String"),
    ("zoneinfo", "zoneinfo", "zoneinfo", "String"),
    ("locale", "locale", "locale", "String"),
    ("updated at", "updatedAt", "updated_at", "long"),
]


def _scope(name, description, attributes, mappers, protocol=OIDC):
    rep = {"name": name, "description": description, "protocol": protocol, "attributes": attributes}
    if mappers:
        rep["protocolMappers"] = mappers
    return rep


def _consent(text, include_in_token_scope="true"):
    attrs = {"display.on.consent.screen": "true", "consent.screen.text": text}
    if include_in_token_scope is not None:
        attrs["include.in.token.scope"] = include_in_token_scope
    return attrs


_NO_CONSENT = {"include.in.token.scope": "false", "display.on.consent.screen": "false"}

_CLIENT_SCOPES = [
    _scope(
        "profile",
        "OpenID Connect built-in scope: profile",
        _consent("${profileScopeConsentText}"),
        [_attr_mapper(*row) for row in _PROFILE_ATTRIBUTES[:3]]
        + [_mapper("full name", "oidc-full-name-mapper", dict(_CLAIM_ALL))]
        + [_attr_mapper(*row) for row in _PROFILE_ATTRIBUTES[3:]],
    ),
    _scope(
        "email",
        "OpenID Connect built-in scope: email",
        _consent("${emailScopeConsentText}"),
        [
            _attr_mapper("email", "email", "email"),
            _mapper(
                "email verified",
                "oidc-usermodel-property-mapper",
                {**_CLAIM_ALL, "user.attribute": "emailVerified", "claim.name": "email_verified",
                 "jsonType.label": "boolean"},
            ),
        ],
    ),
    _scope(
        "address",
        "OpenID Connect built-in scope: address",
        _consent("${addressScopeConsentText}"),
        [
            _mapper(
                "address",
                "oidc-address-mapper",
                {
                    **_CLAIM_ALL,
                    "user.attribute.formatted": "formatted",
                    "user.attribute.country": "country",
                    "user.attribute.postal_code": "postal_code",
                    "user.attribute.street": "street",
                    "user.attribute.region": "region",
                    "user.attribute.locality": "locality",
                },
            )
        ],
    ),
    _scope(
        "phone",
        "OpenID Connect built-in scope: phone",
        _consent("${phoneScopeConsentText}"),
        [
            _attr_mapper("phone number", "phoneNumber", "phone_number"),
            _attr_mapper("phone number verified", "phoneNumberVerified", "phone_number_verified", "boolean"),
        ],
    ),
    _scope(
        "offline_access",
        "OpenID Connect built-in scope: offline_access",
        _consent("${offlineAccessScopeConsentText}", include_in_token_scope=None),
        [],
    ),
    _scope(
        "roles",
        "OpenID Connect scope for add user roles to the access token",
        _consent("${rolesScopeConsentText}", include_in_token_scope="false"),
        [
            _mapper(
                "realm roles",
                "oidc-usermodel-realm-role-mapper",
                {"user.attribute": "foo", "introspection.token.claim": "true", "access.token.claim": "true",
                 "claim.name": "realm_access.roles", "jsonType.label": "String", "multivalued": "true"},
            ),
            _mapper(
                "client roles",
                "oidc-usermodel-client-role-mapper",
                {"user.attribute": "foo", "introspection.token.claim": "true", "access.token.claim": "true",
                 "claim.name": "resource_access.${client_id}.roles", "jsonType.label": "String",
                 "multivalued": "true"},
            ),
            _mapper(
                "audience resolve",
                "oidc-audience-resolve-mapper",
                {"introspection.token.claim": "true", "access.token.claim": "true"},
            ),
        ],
    ),
    _scope(
        "web-origins",
        "OpenID Connect scope for add allowed web origins to the access token",
        {**_NO_CONSENT, "consent.screen.text": ""},
        [
            _mapper(
                "allowed web origins",
                "oidc-allowed-origins-mapper",
                {"introspection.token.claim": "true", "access.token.claim": "true"},
            )
        ],
    ),
    _scope(
        "acr",
        "OpenID Connect scope for add acr (authentication context class reference) to the token",
        dict(_NO_CONSENT),
        [_mapper("acr loa level", "oidc-acr-mapper", dict(_CLAIM_ALL))],
    ),
    _scope(
        "basic",
        "OpenID Connect scope for add all basic claims to the token",
        dict(_NO_CONSENT),
        [
            _mapper(
                "auth_time",
                "oidc-usersessionmodel-note-mapper",
                {**_CLAIM_ALL, "user.session.note": "AUTH_TIME", "claim.name": "auth_time", "jsonType.label": "long"},
            ),
            _mapper("sub", "oidc-sub-mapper", {"introspection.token.claim": "true", "access.token.claim": "true"}),
        ],
    ),
    _scope(
        "organization",
        "Additional claims about the organization a subject belongs to",
        _consent("${organizationScopeConsentText}"),
        [_mapper("organization", "oidc-organization-membership-mapper",
                 {**_CLAIM_ALL, "multivalued": "true", "claim.name": "organization", "jsonType.label": "String"})],
    ),
    _scope(
        "role_list",
        "SAML role list",
        {"consent.screen.text": "${samlRoleListScopeConsentText}", "display.on.consent.screen": "true"},
        [
            _mapper(
                "role list",
                "saml-role-list-mapper",
                {"single": "false", "attribute.nameformat": "Basic", "attribute.name": "Role"},
                protocol=SAML,
            )
        ],
        protocol=SAML,
    ),
]

# offline_access (the scope) carries the offline_access role: requesting it is what allows an
# offline token when the client's full scope is off.
SCOPE_MAPPINGS = [{"clientScope": "offline_access", "roles": ["offline_access"]}]

_ACCOUNT_ROLES = [
    ("view-profile", None),
    ("manage-account", ["manage-account-links"]),
    ("manage-account-links", None),
    ("view-applications", None),
    ("view-consent", None),
    ("manage-consent", ["view-consent"]),
    ("delete-account", None),
    ("view-groups", None),
]

_REALM_MANAGEMENT_ROLES = [
    ("create-client", None),
    ("impersonation", None),
    ("manage-authorization", None),
    ("manage-clients", None),
    ("manage-events", None),
    ("manage-identity-providers", None),
    ("manage-realm", None),
    ("manage-users", None),
    ("query-clients", None),
    ("query-groups", None),
    ("query-realms", None),
    ("query-users", None),
    ("view-authorization", None),
    ("view-clients", ["query-clients"]),
    ("view-events", None),
    ("view-identity-providers", None),
    ("view-realm", None),
    ("view-users", ["query-users", "query-groups"]),
]
_REALM_MANAGEMENT_ROLES.append(("realm-admin", [name for name, _ in _REALM_MANAGEMENT_ROLES]))


def _client_roles(client_id, rows):
    out = []
    for name, composites in rows:
        rep = {"name": name, "description": "${role_%s}" % name}
        if composites:
            rep["composite"] = True
            rep["composites"] = {"client": {client_id: list(composites)}}
        out.append(rep)
    return out


CLIENT_ROLES = {
    "account": _client_roles("account", _ACCOUNT_ROLES),
    "broker": _client_roles("broker", [("read-token", None)]),
    "realm-management": _client_roles("realm-management", _REALM_MANAGEMENT_ROLES),
}

# account-console may hand out the account roles the account UI needs even without full scope.
CLIENT_SCOPE_MAPPINGS = {"account": [{"client": "account-console", "roles": ["manage-account", "view-groups"]}]}


def default_role_name(realm_name):
    return f"default-roles-{realm_name}"


def default_role(realm_name):
    return {
        "name": default_role_name(realm_name),
        "description": "${role_default-roles}",
        "composite": True,
        "composites": {
            "realm": ["offline_access", "uma_authorization"],
            "client": {"account": ["view-profile", "manage-account"]},
        },
    }


def realm_roles(realm_name):
    """Built-in realm roles (without the default role, which is handled on its own)."""
    roles = [
        {"name": "offline_access", "description": "${role_offline-access}"},
        {"name": "uma_authorization", "description": "${role_uma_authorization}"},
    ]
    if realm_name == "master":
        roles += [
            {"name": "create-realm", "description": "${role_create-realm}"},
            {"name": "admin", "description": "${role_admin}", "composite": True,
             "composites": {"realm": ["create-realm"]}},
        ]
    return roles


def client_scopes():
    return copy.deepcopy(_CLIENT_SCOPES)


def _client(client_id, **fields):
    rep = {
        "clientId": client_id,
        "name": "${client_%s}" % client_id,
        "enabled": True,
        "publicClient": False,
        "bearerOnly": False,
        "standardFlowEnabled": True,
        "directAccessGrantsEnabled": False,
        "frontchannelLogout": False,
        "fullScopeAllowed": False,
        "protocol": OIDC,
        "redirectUris": [],
        "webOrigins": [],
        "attributes": {"realm_client": "false", "post.logout.redirect.uris": "+"},
    }
    attributes = fields.pop("attributes", {})
    rep.update(fields)
    rep["attributes"].update(attributes)
    return rep


def clients(realm_name):
    account_base = f"/realms/{realm_name}/account/"
    admin_base = f"/admin/{realm_name}/console/"
    return [
        _client(
            "account", rootUrl="${authBaseUrl}", baseUrl=account_base, publicClient=True,
            redirectUris=[account_base + "*"],
        ),
        _client(
            "account-console", rootUrl="${authBaseUrl}", baseUrl=account_base, publicClient=True,
            redirectUris=[account_base + "*"], attributes={"pkce.code.challenge.method": "S256"},
            protocolMappers=[_mapper("audience resolve", "oidc-audience-resolve-mapper", {})],
        ),
        _client(
            "admin-cli", publicClient=True, standardFlowEnabled=False, directAccessGrantsEnabled=True,
            fullScopeAllowed=True, attributes={"client.use.lightweight.access.token.enabled": "true"},
        ),
        _client("broker", bearerOnly=True, attributes={"realm_client": "true"}),
        _client("realm-management", bearerOnly=True, attributes={"realm_client": "true"}),
        _client(
            "security-admin-console", rootUrl="${authAdminUrl}", baseUrl=admin_base, publicClient=True,
            redirectUris=[admin_base + "*"], webOrigins=["+"], fullScopeAllowed=True,
            attributes={"pkce.code.challenge.method": "S256",
                        "client.use.lightweight.access.token.enabled": "true"},
            protocolMappers=[_attr_mapper("locale", "locale", "locale")],
        ),
    ]


BUILTIN_CLIENT_IDS = frozenset(c["clientId"] for c in clients("x"))
