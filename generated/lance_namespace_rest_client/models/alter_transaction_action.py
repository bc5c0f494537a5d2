from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.alter_transaction_set_property import AlterTransactionSetProperty
    from ..models.alter_transaction_set_status import AlterTransactionSetStatus
    from ..models.alter_transaction_unset_property import AlterTransactionUnsetProperty


T = TypeVar("T", bound="AlterTransactionAction")


@_attrs_define
class AlterTransactionAction:
    """
    Attributes:
        set_status_action (AlterTransactionSetStatus | Unset):
        set_property_action (AlterTransactionSetProperty | Unset):
        unset_property_action (AlterTransactionUnsetProperty | Unset):
    """

    set_status_action: AlterTransactionSetStatus | Unset = UNSET
    set_property_action: AlterTransactionSetProperty | Unset = UNSET
    unset_property_action: AlterTransactionUnsetProperty | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        set_status_action: dict[str, Any] | Unset = UNSET
        if not isinstance(self.set_status_action, Unset):
            set_status_action = self.set_status_action.to_dict()

        set_property_action: dict[str, Any] | Unset = UNSET
        if not isinstance(self.set_property_action, Unset):
            set_property_action = self.set_property_action.to_dict()

        unset_property_action: dict[str, Any] | Unset = UNSET
        if not isinstance(self.unset_property_action, Unset):
            unset_property_action = self.unset_property_action.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if set_status_action is not UNSET:
            field_dict["setStatusAction"] = set_status_action
        if set_property_action is not UNSET:
            field_dict["setPropertyAction"] = set_property_action
        if unset_property_action is not UNSET:
            field_dict["unsetPropertyAction"] = unset_property_action

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _set_status_action = d.pop("setStatusAction", UNSET)
        set_status_action: AlterTransactionSetStatus | Unset
        if isinstance(_set_status_action, Unset):
            set_status_action = UNSET
        else:
            set_status_action = AlterTransactionSetStatus.from_dict(_set_status_action)

        _set_property_action = d.pop("setPropertyAction", UNSET)
        set_property_action: AlterTransactionSetProperty | Unset
        if isinstance(_set_property_action, Unset):
            set_property_action = UNSET
        else:
            set_property_action = AlterTransactionSetProperty.from_dict(_set_property_action)

        _unset_property_action = d.pop("unsetPropertyAction", UNSET)
        unset_property_action: AlterTransactionUnsetProperty | Unset
        if isinstance(_unset_property_action, Unset):
            unset_property_action = UNSET
        else:
            unset_property_action = AlterTransactionUnsetProperty.from_dict(_unset_property_action)

        alter_transaction_action = cls(
            set_status_action=set_status_action,
            set_property_action=set_property_action,
            unset_property_action=unset_property_action,
        )

        alter_transaction_action.additional_properties = d
        return alter_transaction_action

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


from ..models.alter_transaction_set_property import AlterTransactionSetProperty
from ..models.alter_transaction_set_status import AlterTransactionSetStatus
from ..models.alter_transaction_unset_property import AlterTransactionUnsetProperty
