from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context


T = TypeVar("T", bound="ErrorResponse")


@_attrs_define
class ErrorResponse:
    """JSON body of every error response.

    Attributes:
        code (int): Lance namespace error code: 0 Unsupported, 1 NamespaceNotFound, 2 NamespaceAlreadyExists, 3
            NamespaceNotEmpty, 4 TableNotFound, 5 TableAlreadyExists, 6 TableIndexNotFound, 7 TableIndexAlreadyExists, 8
            TableTagNotFound, 9 TableTagAlreadyExists, 10 TransactionNotFound, 11 TableVersionNotFound, 12
            TableColumnNotFound, 13 InvalidInput, 14 ConcurrentModification, 15 PermissionDenied, 16 Unauthenticated, 17
            ServiceUnavailable, 18 Internal, 19 InvalidTableState, 20 TableSchemaValidationError, 21 Throttling, 22
            TableBranchNotFound, 23 TableBranchAlreadyExists.
        context (Context | None | Unset):
        error (None | str | Unset): Short human-readable message.
        detail (None | str | Unset): Longer explanation (may hold e.g. a stack trace).
        instance (None | str | Unset): Identifies this occurrence of the error (URI, request id, ...).
    """

    code: int
    context: Context | None | Unset = UNSET
    error: None | str | Unset = UNSET
    detail: None | str | Unset = UNSET
    instance: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code = self.code

        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, Context):
            context = self.context.to_dict()
        else:
            context = self.context

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        detail: None | str | Unset
        if isinstance(self.detail, Unset):
            detail = UNSET
        else:
            detail = self.detail

        instance: None | str | Unset
        if isinstance(self.instance, Unset):
            instance = UNSET
        else:
            instance = self.instance

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
            }
        )
        if context is not UNSET:
            field_dict["context"] = context
        if error is not UNSET:
            field_dict["error"] = error
        if detail is not UNSET:
            field_dict["detail"] = detail
        if instance is not UNSET:
            field_dict["instance"] = instance

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        code = d.pop("code")

        def _parse_context(data: object) -> Context | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                context_type_0 = Context.from_dict(data)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Context | None | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        error = cast(None | str | Unset, d.pop("error", UNSET))

        detail = cast(None | str | Unset, d.pop("detail", UNSET))

        instance = cast(None | str | Unset, d.pop("instance", UNSET))

        error_response = cls(
            code=code,
            context=context,
            error=error,
            detail=detail,
            instance=instance,
        )

        error_response.additional_properties = d
        return error_response

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties


from ..models.context import Context
