from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.merge_insert_into_table_response import MergeInsertIntoTableResponse
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    id: str,
    *,
    body: File,
    delimiter: str | Unset = UNSET,
    branch: str | Unset = UNSET,
    on: list[str],
    when_matched_update_all: bool | Unset = UNSET,
    when_matched_update_all_filt: str | Unset = UNSET,
    when_not_matched_insert_all: bool | Unset = UNSET,
    when_not_matched_by_source_delete: bool | Unset = UNSET,
    when_not_matched_by_source_delete_filt: str | Unset = UNSET,
    timeout: str | Unset = UNSET,
    use_index: bool | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["delimiter"] = delimiter

    params["branch"] = branch

    json_on = on

    params["on"] = json_on

    params["when_matched_update_all"] = when_matched_update_all

    params["when_matched_update_all_filt"] = when_matched_update_all_filt

    params["when_not_matched_insert_all"] = when_not_matched_insert_all

    params["when_not_matched_by_source_delete"] = when_not_matched_by_source_delete

    params["when_not_matched_by_source_delete_filt"] = when_not_matched_by_source_delete_filt

    params["timeout"] = timeout

    params["use_index"] = use_index

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/table/{id}/merge_insert".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    _kwargs["content"] = body.payload
    headers["Content-Type"] = "application/vnd.apache.arrow.stream"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | MergeInsertIntoTableResponse | None:
    if response.status_code == 200:
        response_200 = MergeInsertIntoTableResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ErrorResponse.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorResponse.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorResponse.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = ErrorResponse.from_dict(response.json())

        return response_404

    if response.status_code == 406:
        response_406 = ErrorResponse.from_dict(response.json())

        return response_406

    if response.status_code == 413:
        response_413 = ErrorResponse.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = ErrorResponse.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = ErrorResponse.from_dict(response.json())

        return response_503

    if 500 <= response.status_code <= 599:
        response_5xx = ErrorResponse.from_dict(response.json())

        return response_5xx

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorResponse | MergeInsertIntoTableResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    delimiter: str | Unset = UNSET,
    branch: str | Unset = UNSET,
    on: list[str],
    when_matched_update_all: bool | Unset = UNSET,
    when_matched_update_all_filt: str | Unset = UNSET,
    when_not_matched_insert_all: bool | Unset = UNSET,
    when_not_matched_by_source_delete: bool | Unset = UNSET,
    when_not_matched_by_source_delete_filt: str | Unset = UNSET,
    timeout: str | Unset = UNSET,
    use_index: bool | Unset = UNSET,
) -> Response[ErrorResponse | MergeInsertIntoTableResponse]:
    """Merge rows

     Upserts the rows of an Arrow IPC stream into table `id`, matching on the `on` columns.

    Args:
        id (str):
        delimiter (str | Unset):
        branch (str | Unset):
        on (list[str]):
        when_matched_update_all (bool | Unset):
        when_matched_update_all_filt (str | Unset):
        when_not_matched_insert_all (bool | Unset):
        when_not_matched_by_source_delete (bool | Unset):
        when_not_matched_by_source_delete_filt (str | Unset):
        timeout (str | Unset):
        use_index (bool | Unset):
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | MergeInsertIntoTableResponse]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
        delimiter=delimiter,
        branch=branch,
        on=on,
        when_matched_update_all=when_matched_update_all,
        when_matched_update_all_filt=when_matched_update_all_filt,
        when_not_matched_insert_all=when_not_matched_insert_all,
        when_not_matched_by_source_delete=when_not_matched_by_source_delete,
        when_not_matched_by_source_delete_filt=when_not_matched_by_source_delete_filt,
        timeout=timeout,
        use_index=use_index,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    delimiter: str | Unset = UNSET,
    branch: str | Unset = UNSET,
    on: list[str],
    when_matched_update_all: bool | Unset = UNSET,
    when_matched_update_all_filt: str | Unset = UNSET,
    when_not_matched_insert_all: bool | Unset = UNSET,
    when_not_matched_by_source_delete: bool | Unset = UNSET,
    when_not_matched_by_source_delete_filt: str | Unset = UNSET,
    timeout: str | Unset = UNSET,
    use_index: bool | Unset = UNSET,
) -> ErrorResponse | MergeInsertIntoTableResponse | None:
    """Merge rows

     Upserts the rows of an Arrow IPC stream into table `id`, matching on the `on` columns.

    Args:
        id (str):
        delimiter (str | Unset):
        branch (str | Unset):
        on (list[str]):
        when_matched_update_all (bool | Unset):
        when_matched_update_all_filt (str | Unset):
        when_not_matched_insert_all (bool | Unset):
        when_not_matched_by_source_delete (bool | Unset):
        when_not_matched_by_source_delete_filt (str | Unset):
        timeout (str | Unset):
        use_index (bool | Unset):
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | MergeInsertIntoTableResponse
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
        delimiter=delimiter,
        branch=branch,
        on=on,
        when_matched_update_all=when_matched_update_all,
        when_matched_update_all_filt=when_matched_update_all_filt,
        when_not_matched_insert_all=when_not_matched_insert_all,
        when_not_matched_by_source_delete=when_not_matched_by_source_delete,
        when_not_matched_by_source_delete_filt=when_not_matched_by_source_delete_filt,
        timeout=timeout,
        use_index=use_index,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    delimiter: str | Unset = UNSET,
    branch: str | Unset = UNSET,
    on: list[str],
    when_matched_update_all: bool | Unset = UNSET,
    when_matched_update_all_filt: str | Unset = UNSET,
    when_not_matched_insert_all: bool | Unset = UNSET,
    when_not_matched_by_source_delete: bool | Unset = UNSET,
    when_not_matched_by_source_delete_filt: str | Unset = UNSET,
    timeout: str | Unset = UNSET,
    use_index: bool | Unset = UNSET,
) -> Response[ErrorResponse | MergeInsertIntoTableResponse]:
    """Merge rows

     Upserts the rows of an Arrow IPC stream into table `id`, matching on the `on` columns.

    Args:
        id (str):
        delimiter (str | Unset):
        branch (str | Unset):
        on (list[str]):
        when_matched_update_all (bool | Unset):
        when_matched_update_all_filt (str | Unset):
        when_not_matched_insert_all (bool | Unset):
        when_not_matched_by_source_delete (bool | Unset):
        when_not_matched_by_source_delete_filt (str | Unset):
        timeout (str | Unset):
        use_index (bool | Unset):
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | MergeInsertIntoTableResponse]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
        delimiter=delimiter,
        branch=branch,
        on=on,
        when_matched_update_all=when_matched_update_all,
        when_matched_update_all_filt=when_matched_update_all_filt,
        when_not_matched_insert_all=when_not_matched_insert_all,
        when_not_matched_by_source_delete=when_not_matched_by_source_delete,
        when_not_matched_by_source_delete_filt=when_not_matched_by_source_delete_filt,
        timeout=timeout,
        use_index=use_index,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    delimiter: str | Unset = UNSET,
    branch: str | Unset = UNSET,
    on: list[str],
    when_matched_update_all: bool | Unset = UNSET,
    when_matched_update_all_filt: str | Unset = UNSET,
    when_not_matched_insert_all: bool | Unset = UNSET,
    when_not_matched_by_source_delete: bool | Unset = UNSET,
    when_not_matched_by_source_delete_filt: str | Unset = UNSET,
    timeout: str | Unset = UNSET,
    use_index: bool | Unset = UNSET,
) -> ErrorResponse | MergeInsertIntoTableResponse | None:
    """Merge rows

     Upserts the rows of an Arrow IPC stream into table `id`, matching on the `on` columns.

    Args:
        id (str):
        delimiter (str | Unset):
        branch (str | Unset):
        on (list[str]):
        when_matched_update_all (bool | Unset):
        when_matched_update_all_filt (str | Unset):
        when_not_matched_insert_all (bool | Unset):
        when_not_matched_by_source_delete (bool | Unset):
        when_not_matched_by_source_delete_filt (str | Unset):
        timeout (str | Unset):
        use_index (bool | Unset):
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | MergeInsertIntoTableResponse
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
            delimiter=delimiter,
            branch=branch,
            on=on,
            when_matched_update_all=when_matched_update_all,
            when_matched_update_all_filt=when_matched_update_all_filt,
            when_not_matched_insert_all=when_not_matched_insert_all,
            when_not_matched_by_source_delete=when_not_matched_by_source_delete,
            when_not_matched_by_source_delete_filt=when_not_matched_by_source_delete_filt,
            timeout=timeout,
            use_index=use_index,
        )
    ).parsed
