"""What the SCIM endpoint serves, described as RFC 7643 §7 asks: the User and Group schemas hold
exactly the attributes this server stores (a client reading ``/Schemas`` learns what will be
kept), the resource types, and the service provider's configuration."""
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"
RESOURCE_TYPE = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
SERVICE_PROVIDER_CONFIG = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
LIST_RESPONSE = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
SEARCH_REQUEST = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
MAX_RESULTS = 1000


def _attr(name, type_="string", *, multi=False, required=False, case_exact=False, mutability="readWrite",
          returned="default", uniqueness="none", sub=(), ref_types=None, canonical=None, description=""):
    attr = {"name": name, "type": type_, "multiValued": multi, "description": description or name,
            "required": required, "caseExact": case_exact, "mutability": mutability, "returned": returned,
            "uniqueness": uniqueness}
    if sub:
        attr["subAttributes"] = list(sub)
    if ref_types:
        attr["referenceTypes"] = ref_types
    if canonical:
        attr["canonicalValues"] = canonical
    return attr


USER_ATTRIBUTES = [
    _attr("userName", required=True, uniqueness="server",
          description="The user's username, unique in the realm; kept in lower case."),
    _attr("name", "complex", description="The user's names.", sub=[
        _attr("givenName", description="First name."),
        _attr("familyName", description="Last name."),
    ]),
    # Required because a user's enabled flag always has a value (it cannot be removed); a create
    # without it makes an enabled user and a replace without it keeps the flag, as clients that
    # leave it out expect (docs/decisions/0034-scim.md).
    _attr("active", "boolean", required=True,
          description="Whether the user may sign in (the user's enabled flag)."),
    _attr("emails", "complex", multi=True, sub=[_attr("value", description="The address.")],
          description="The user's e-mail address: one is kept, the one sent as primary, else the first."),
    _attr("password", mutability="writeOnly", returned="never",
          description="Sets the user's password, under the realm's password policy."),
    _attr("groups", "complex", multi=True, mutability="readOnly",
          description="The groups the user is a direct member of.", sub=[
              _attr("value", mutability="readOnly", description="The group's id."),
              _attr("$ref", "reference", mutability="readOnly", ref_types=["Group"],
                    description="The group's URI."),
              _attr("display", mutability="readOnly", description="The group's name."),
          ]),
]

GROUP_ATTRIBUTES = [
    _attr("displayName", required=True, description="The group's name."),
    _attr("members", "complex", multi=True, description="The users who are direct members.", sub=[
        _attr("value", mutability="immutable", description="The member's id."),
        _attr("$ref", "reference", mutability="immutable", ref_types=["User"], description="The member's URI."),
        _attr("type", mutability="immutable", canonical=["User"], description="Always User."),
    ]),
]

SCHEMAS = {
    USER: ("User", "User Account", USER_ATTRIBUTES),
    GROUP: ("Group", "Group", GROUP_ATTRIBUTES),
}


def schema_doc(urn, base):
    name, description, attributes = SCHEMAS[urn]
    return {"schemas": [SCHEMA], "id": urn, "name": name, "description": description, "attributes": attributes,
            "meta": {"resourceType": "Schema", "location": f"{base}/Schemas/{urn}"}}


RESOURCE_TYPES = {"User": ("/Users", USER, "User Account"), "Group": ("/Groups", GROUP, "Group")}


def resource_type_doc(name, base):
    endpoint, schema, description = RESOURCE_TYPES[name]
    return {"schemas": [RESOURCE_TYPE], "id": name, "name": name, "endpoint": endpoint,
            "description": description, "schema": schema, "schemaExtensions": [],
            "meta": {"resourceType": "ResourceType", "location": f"{base}/ResourceTypes/{name}"}}


def service_provider_config(base):
    return {
        "schemas": [SERVICE_PROVIDER_CONFIG],
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_RESULTS},
        "changePassword": {"supported": True},
        "sort": {"supported": True},
        "etag": {"supported": True},
        "authenticationSchemes": [{
            "type": "oauthbearertoken", "name": "OAuth Bearer Token", "primary": True,
            "description": "An access token of this realm for a confidential client whose service "
                           "account holds realm-management's manage-users (view-users to read), with "
                           "this endpoint's URL in its audience.",
            "specUri": "https://www.rfc-editor.org/info/rfc6750",
        }],
        "meta": {"resourceType": "ServiceProviderConfig", "location": f"{base}/ServiceProviderConfig"},
    }


def canonical_names(attributes):
    """Lower-cased name -> attribute (its definition), one level."""
    return {a["name"].lower(): a for a in attributes}
