from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.list_table_tags_response import ListTableTagsResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: str,
    *,
    delimiter: str | Unset = UNSET,
    page_token: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["delimiter"] = delimiter

    json_page_token: None | str | Unset
    if isinstance(page_token, Unset):
        json_page_token = UNSET
    else:
        json_page_token = page_token
    params["page_token"] = json_page_token

    json_limit: int | None | Unset
    if isinstance(limit, Unset):
        json_limit = UNSET
    else:
        json_limit = limit
    params["limit"] = json_limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/table/{id}/tags/list".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | ListTableTagsResponse | None:
    if response.status_code == 200:
        response_200 = ListTableTagsResponse.from_dict(response.json())

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
) -> Response[ErrorResponse | ListTableTagsResponse]:
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
    delimiter: str | Unset = UNSET,
    page_token: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
) -> Response[ErrorResponse | ListTableTagsResponse]:
    """List tags

     Lists the tags of table `id` with the versions they point at; there is no request body.

    Args:
        id (str):
        delimiter (str | Unset):
        page_token (None | str | Unset): Opaque continuation token of a paginated listing. A
            response carries one when more items remain; pass it back unchanged to get the next page.
            A null, missing or empty token in a response means the listing is complete.
        limit (int | None | Unset): Inclusive upper bound on the number of items in one page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | ListTableTagsResponse]
    """

    kwargs = _get_kwargs(
        id=id,
        delimiter=delimiter,
        page_token=page_token,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    delimiter: str | Unset = UNSET,
    page_token: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
) -> ErrorResponse | ListTableTagsResponse | None:
    """List tags

     Lists the tags of table `id` with the versions they point at; there is no request body.

    Args:
        id (str):
        delimiter (str | Unset):
        page_token (None | str | Unset): Opaque continuation token of a paginated listing. A
            response carries one when more items remain; pass it back unchanged to get the next page.
            A null, missing or empty token in a response means the listing is complete.
        limit (int | None | Unset): Inclusive upper bound on the number of items in one page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | ListTableTagsResponse
    """

    return sync_detailed(
        id=id,
        client=client,
        delimiter=delimiter,
        page_token=page_token,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    delimiter: str | Unset = UNSET,
    page_token: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
) -> Response[ErrorResponse | ListTableTagsResponse]:
    """List tags

     Lists the tags of table `id` with the versions they point at; there is no request body.

    Args:
        id (str):
        delimiter (str | Unset):
        page_token (None | str | Unset): Opaque continuation token of a paginated listing. A
            response carries one when more items remain; pass it back unchanged to get the next page.
            A null, missing or empty token in a response means the listing is complete.
        limit (int | None | Unset): Inclusive upper bound on the number of items in one page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | ListTableTagsResponse]
    """

    kwargs = _get_kwargs(
        id=id,
        delimiter=delimiter,
        page_token=page_token,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    delimiter: str | Unset = UNSET,
    page_token: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
) -> ErrorResponse | ListTableTagsResponse | None:
    """List tags

     Lists the tags of table `id` with the versions they point at; there is no request body.

    Args:
        id (str):
        delimiter (str | Unset):
        page_token (None | str | Unset): Opaque continuation token of a paginated listing. A
            response carries one when more items remain; pass it back unchanged to get the next page.
            A null, missing or empty token in a response means the listing is complete.
        limit (int | None | Unset): Inclusive upper bound on the number of items in one page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | ListTableTagsResponse
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            delimiter=delimiter,
            page_token=page_token,
            limit=limit,
        )
    ).parsed
