from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.batch_delete_table_versions_request import BatchDeleteTableVersionsRequest
from ...models.batch_delete_table_versions_response import BatchDeleteTableVersionsResponse
from ...models.error_response import ErrorResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: str,
    *,
    body: BatchDeleteTableVersionsRequest,
    delimiter: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["delimiter"] = delimiter

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/table/{id}/version/delete".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> BatchDeleteTableVersionsResponse | ErrorResponse | None:
    if response.status_code == 200:
        response_200 = BatchDeleteTableVersionsResponse.from_dict(response.json())

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
) -> Response[BatchDeleteTableVersionsResponse | ErrorResponse]:
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
    body: BatchDeleteTableVersionsRequest,
    delimiter: str | Unset = UNSET,
) -> Response[BatchDeleteTableVersionsResponse | ErrorResponse]:
    """Delete table versions

     Removes the version records in the given ranges of table `id` (each from its start version,
    inclusive, to its end version, exclusive; an end of -1 reaches the latest).

    Args:
        id (str):
        delimiter (str | Unset):
        body (BatchDeleteTableVersionsRequest): Request of BatchDeleteTableVersions.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchDeleteTableVersionsResponse | ErrorResponse]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
        delimiter=delimiter,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: BatchDeleteTableVersionsRequest,
    delimiter: str | Unset = UNSET,
) -> BatchDeleteTableVersionsResponse | ErrorResponse | None:
    """Delete table versions

     Removes the version records in the given ranges of table `id` (each from its start version,
    inclusive, to its end version, exclusive; an end of -1 reaches the latest).

    Args:
        id (str):
        delimiter (str | Unset):
        body (BatchDeleteTableVersionsRequest): Request of BatchDeleteTableVersions.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchDeleteTableVersionsResponse | ErrorResponse
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
        delimiter=delimiter,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: BatchDeleteTableVersionsRequest,
    delimiter: str | Unset = UNSET,
) -> Response[BatchDeleteTableVersionsResponse | ErrorResponse]:
    """Delete table versions

     Removes the version records in the given ranges of table `id` (each from its start version,
    inclusive, to its end version, exclusive; an end of -1 reaches the latest).

    Args:
        id (str):
        delimiter (str | Unset):
        body (BatchDeleteTableVersionsRequest): Request of BatchDeleteTableVersions.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchDeleteTableVersionsResponse | ErrorResponse]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
        delimiter=delimiter,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: BatchDeleteTableVersionsRequest,
    delimiter: str | Unset = UNSET,
) -> BatchDeleteTableVersionsResponse | ErrorResponse | None:
    """Delete table versions

     Removes the version records in the given ranges of table `id` (each from its start version,
    inclusive, to its end version, exclusive; an end of -1 reaches the latest).

    Args:
        id (str):
        delimiter (str | Unset):
        body (BatchDeleteTableVersionsRequest): Request of BatchDeleteTableVersions.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchDeleteTableVersionsResponse | ErrorResponse
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
            delimiter=delimiter,
        )
    ).parsed
