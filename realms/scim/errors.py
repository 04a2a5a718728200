"""SCIM's error response (RFC 7644 §3.12): ``status`` as a string, a ``scimType`` where the RFC
names one, and a ``detail`` a person can act on."""
from .schemas import ERROR


class ScimError(Exception):
    def __init__(self, status, detail, scim_type=None):
        super().__init__(detail)
        self.status, self.detail, self.scim_type = status, detail, scim_type

    def body(self):
        body = {"schemas": [ERROR], "status": str(self.status), "detail": self.detail}
        if self.scim_type:
            body["scimType"] = self.scim_type
        return body
