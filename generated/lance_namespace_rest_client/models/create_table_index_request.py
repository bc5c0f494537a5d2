from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.identity import Identity


T = TypeVar("T", bound="CreateTableIndexRequest")


@_attrs_define
class CreateTableIndexRequest:
    """Request of CreateTableIndex.

    Attributes:
        column (str):
        index_type (str):
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        branch (str | Unset):
        name (None | str | Unset):
        distance_type (str | Unset):
        num_partitions (int | None | Unset):
        num_sub_vectors (int | None | Unset):
        num_bits (int | None | Unset):
        sample_rate (int | None | Unset):
        max_iterations (int | None | Unset):
        target_partition_size (int | None | Unset):
        m (int | None | Unset):
        ef_construction (int | None | Unset):
        with_position (bool | None | Unset):
        base_tokenizer (None | str | Unset):
        language (None | str | Unset):
        max_token_length (int | None | Unset):
        lower_case (bool | None | Unset):
        stem (bool | None | Unset):
        remove_stop_words (bool | None | Unset):
        ascii_folding (bool | None | Unset):
    """

    column: str
    index_type: str
    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    branch: str | Unset = UNSET
    name: None | str | Unset = UNSET
    distance_type: str | Unset = UNSET
    num_partitions: int | None | Unset = UNSET
    num_sub_vectors: int | None | Unset = UNSET
    num_bits: int | None | Unset = UNSET
    sample_rate: int | None | Unset = UNSET
    max_iterations: int | None | Unset = UNSET
    target_partition_size: int | None | Unset = UNSET
    m: int | None | Unset = UNSET
    ef_construction: int | None | Unset = UNSET
    with_position: bool | None | Unset = UNSET
    base_tokenizer: None | str | Unset = UNSET
    language: None | str | Unset = UNSET
    max_token_length: int | None | Unset = UNSET
    lower_case: bool | None | Unset = UNSET
    stem: bool | None | Unset = UNSET
    remove_stop_words: bool | None | Unset = UNSET
    ascii_folding: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        column = self.column

        index_type = self.index_type

        identity: dict[str, Any] | Unset = UNSET
        if not isinstance(self.identity, Unset):
            identity = self.identity.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        id: list[str] | Unset = UNSET
        if not isinstance(self.id, Unset):
            id = self.id

        branch = self.branch

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        distance_type = self.distance_type

        num_partitions: int | None | Unset
        if isinstance(self.num_partitions, Unset):
            num_partitions = UNSET
        else:
            num_partitions = self.num_partitions

        num_sub_vectors: int | None | Unset
        if isinstance(self.num_sub_vectors, Unset):
            num_sub_vectors = UNSET
        else:
            num_sub_vectors = self.num_sub_vectors

        num_bits: int | None | Unset
        if isinstance(self.num_bits, Unset):
            num_bits = UNSET
        else:
            num_bits = self.num_bits

        sample_rate: int | None | Unset
        if isinstance(self.sample_rate, Unset):
            sample_rate = UNSET
        else:
            sample_rate = self.sample_rate

        max_iterations: int | None | Unset
        if isinstance(self.max_iterations, Unset):
            max_iterations = UNSET
        else:
            max_iterations = self.max_iterations

        target_partition_size: int | None | Unset
        if isinstance(self.target_partition_size, Unset):
            target_partition_size = UNSET
        else:
            target_partition_size = self.target_partition_size

        m: int | None | Unset
        if isinstance(self.m, Unset):
            m = UNSET
        else:
            m = self.m

        ef_construction: int | None | Unset
        if isinstance(self.ef_construction, Unset):
            ef_construction = UNSET
        else:
            ef_construction = self.ef_construction

        with_position: bool | None | Unset
        if isinstance(self.with_position, Unset):
            with_position = UNSET
        else:
            with_position = self.with_position

        base_tokenizer: None | str | Unset
        if isinstance(self.base_tokenizer, Unset):
            base_tokenizer = UNSET
        else:
            base_tokenizer = self.base_tokenizer

        language: None | str | Unset
        if isinstance(self.language, Unset):
            language = UNSET
        else:
            language = self.language

        max_token_length: int | None | Unset
        if isinstance(self.max_token_length, Unset):
            max_token_length = UNSET
        else:
            max_token_length = self.max_token_length

        lower_case: bool | None | Unset
        if isinstance(self.lower_case, Unset):
            lower_case = UNSET
        else:
            lower_case = self.lower_case

        stem: bool | None | Unset
        if isinstance(self.stem, Unset):
            stem = UNSET
        else:
            stem = self.stem

        remove_stop_words: bool | None | Unset
        if isinstance(self.remove_stop_words, Unset):
            remove_stop_words = UNSET
        else:
            remove_stop_words = self.remove_stop_words

        ascii_folding: bool | None | Unset
        if isinstance(self.ascii_folding, Unset):
            ascii_folding = UNSET
        else:
            ascii_folding = self.ascii_folding

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "column": column,
                "index_type": index_type,
            }
        )
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if id is not UNSET:
            field_dict["id"] = id
        if branch is not UNSET:
            field_dict["branch"] = branch
        if name is not UNSET:
            field_dict["name"] = name
        if distance_type is not UNSET:
            field_dict["distance_type"] = distance_type
        if num_partitions is not UNSET:
            field_dict["num_partitions"] = num_partitions
        if num_sub_vectors is not UNSET:
            field_dict["num_sub_vectors"] = num_sub_vectors
        if num_bits is not UNSET:
            field_dict["num_bits"] = num_bits
        if sample_rate is not UNSET:
            field_dict["sample_rate"] = sample_rate
        if max_iterations is not UNSET:
            field_dict["max_iterations"] = max_iterations
        if target_partition_size is not UNSET:
            field_dict["target_partition_size"] = target_partition_size
        if m is not UNSET:
            field_dict["m"] = m
        if ef_construction is not UNSET:
            field_dict["ef_construction"] = ef_construction
        if with_position is not UNSET:
            field_dict["with_position"] = with_position
        if base_tokenizer is not UNSET:
            field_dict["base_tokenizer"] = base_tokenizer
        if language is not UNSET:
            field_dict["language"] = language
        if max_token_length is not UNSET:
            field_dict["max_token_length"] = max_token_length
        if lower_case is not UNSET:
            field_dict["lower_case"] = lower_case
        if stem is not UNSET:
            field_dict["stem"] = stem
        if remove_stop_words is not UNSET:
            field_dict["remove_stop_words"] = remove_stop_words
        if ascii_folding is not UNSET:
            field_dict["ascii_folding"] = ascii_folding

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        column = d.pop("column")

        index_type = d.pop("index_type")

        _identity = d.pop("identity", UNSET)
        identity: Identity | Unset
        if isinstance(_identity, Unset):
            identity = UNSET
        else:
            identity = Identity.from_dict(_identity)

        _context = d.pop("context", UNSET)
        context: Context | Unset
        if isinstance(_context, Unset):
            context = UNSET
        else:
            context = Context.from_dict(_context)

        id = cast(list[str], d.pop("id", UNSET))

        branch = d.pop("branch", UNSET)

        name = cast(None | str | Unset, d.pop("name", UNSET))

        distance_type = d.pop("distance_type", UNSET)

        num_partitions = cast(int | None | Unset, d.pop("num_partitions", UNSET))

        num_sub_vectors = cast(int | None | Unset, d.pop("num_sub_vectors", UNSET))

        num_bits = cast(int | None | Unset, d.pop("num_bits", UNSET))

        sample_rate = cast(int | None | Unset, d.pop("sample_rate", UNSET))

        max_iterations = cast(int | None | Unset, d.pop("max_iterations", UNSET))

        target_partition_size = cast(int | None | Unset, d.pop("target_partition_size", UNSET))

        m = cast(int | None | Unset, d.pop("m", UNSET))

        ef_construction = cast(int | None | Unset, d.pop("ef_construction", UNSET))

        with_position = cast(bool | None | Unset, d.pop("with_position", UNSET))

        base_tokenizer = cast(None | str | Unset, d.pop("base_tokenizer", UNSET))

        language = cast(None | str | Unset, d.pop("language", UNSET))

        max_token_length = cast(int | None | Unset, d.pop("max_token_length", UNSET))

        lower_case = cast(bool | None | Unset, d.pop("lower_case", UNSET))

        stem = cast(bool | None | Unset, d.pop("stem", UNSET))

        remove_stop_words = cast(bool | None | Unset, d.pop("remove_stop_words", UNSET))

        ascii_folding = cast(bool | None | Unset, d.pop("ascii_folding", UNSET))

        create_table_index_request = cls(
            column=column,
            index_type=index_type,
            identity=identity,
            context=context,
            id=id,
            branch=branch,
            name=name,
            distance_type=distance_type,
            num_partitions=num_partitions,
            num_sub_vectors=num_sub_vectors,
            num_bits=num_bits,
            sample_rate=sample_rate,
            max_iterations=max_iterations,
            target_partition_size=target_partition_size,
            m=m,
            ef_construction=ef_construction,
            with_position=with_position,
            base_tokenizer=base_tokenizer,
            language=language,
            max_token_length=max_token_length,
            lower_case=lower_case,
            stem=stem,
            remove_stop_words=remove_stop_words,
            ascii_folding=ascii_folding,
        )

        create_table_index_request.additional_properties = d
        return create_table_index_request

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
from ..models.identity import Identity
