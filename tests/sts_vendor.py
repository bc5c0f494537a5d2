"""moto's S3 that only accepts live credentials, and the STS vendor the catalog look-alikes use.

A governed catalog holds storage rights itself and hands clients short-lived credentials
for one table. Here that is real: ``moto_with_iam()`` runs moto's server (S3, STS, IAM)
on 127.0.0.1 with IAM authentication on, so S3 accepts only credentials moto issued:

* an IAM user ``catalog`` (the catalog's own identity: may assume the roles below, and
  owns the data, so tests write fixtures with it as the producer);
* a role ``lance-read`` (``s3:GetObject``, ``s3:ListBucket``) and a role
  ``lance-read-write`` (``s3:*``): what READ and READ_WRITE credentials allow;
* :class:`StsVendor`: AssumeRole as ``catalog`` with a lifetime of a few seconds
  (botocore's client-side ``DurationSeconds >= 900`` check is off; moto takes any), which is
  what the Unity and Iceberg look-alikes hand out.

moto records an expiration for assumed-role credentials but never enforces it. AWS does
(``ExpiredToken``), so the fixture does too: a reaper thread drops assumed roles past their
expiration from moto's STS backend every 50 ms, after which S3 refuses their access key
(403 ``InvalidAccessKeyId``). That is the one place this suite reaches into moto's
in-process state; everything else goes over HTTP.

IAM authentication is a process-wide moto setting (``INITIAL_NO_AUTH_ACTION_COUNT``): it is
switched on for the block and restored after, so the other moto servers of the run (Glue
tests with fake credentials) are unaffected; the suite does not run modules concurrently
within one process.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3  # type: ignore[import-untyped]
from botocore.config import Config
from glue_fixtures import ACCOUNT, REGION, free_port

BUCKET = "vended-warehouse"
_READ_ACTIONS = ["s3:GetObject", "s3:ListBucket"]


def _policy(actions: list[str] | str) -> str:
    statement = {"Effect": "Allow", "Action": actions, "Resource": "*"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@dataclass
class StsVendor:
    """Issues real moto STS credentials as the catalog's IAM user, ``lifetime`` seconds long.

    ``issued`` counts the credentials handed out per operation (READ / READ_WRITE).
    """

    endpoint: str
    access_key_id: str
    secret_access_key: str
    roles: dict[str, str]  # operation -> role ARN
    lifetime: int = 3
    issued: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __repr__(self) -> str:  # the catalog's secret stays out of test reports
        return f"StsVendor(endpoint={self.endpoint!r}, lifetime={self.lifetime})"

    def vend(self, operation: str = "READ_WRITE") -> dict[str, Any]:
        """``access_key_id``, ``secret_access_key``, ``session_token``, ``expiration_millis``."""
        sts = boto3.client(
            "sts",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            config=Config(parameter_validation=False, retries={"total_max_attempts": 1}),
        )
        answer = sts.assume_role(
            RoleArn=self.roles[operation],
            RoleSessionName="lance-vended",
            DurationSeconds=self.lifetime,
        )["Credentials"]
        with self._lock:
            self.issued[operation] = self.issued.get(operation, 0) + 1
        return {
            "access_key_id": answer["AccessKeyId"],
            "secret_access_key": answer["SecretAccessKey"],
            "session_token": answer["SessionToken"],
            "expiration_millis": int(answer["Expiration"].timestamp() * 1000),
        }

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self.issued.values())


@dataclass
class MotoAws:
    endpoint: str
    vendor: StsVendor
    producer_options: dict[str, str]  # the catalog's own (full) rights, for test fixtures
    client_options: dict[str, str]  # endpoint and region only: what a client may hold

    def __repr__(self) -> str:
        return f"MotoAws(endpoint={self.endpoint!r})"


def _live(expiration: dt.datetime, now: float) -> bool:
    if expiration.tzinfo is None:  # moto keeps naive UTC datetimes
        expiration = expiration.replace(tzinfo=dt.UTC)
    return expiration.timestamp() > now


def _reap_expired(stop: threading.Event) -> None:
    from moto.sts.models import sts_backends

    while not stop.wait(0.05):
        now = time.time()
        for partitions in list(sts_backends.values()):
            for backend in list(partitions.values()):
                roles = backend.assumed_roles
                roles[:] = [role for role in roles if _live(role.expiration, now)]


@contextlib.contextmanager
def moto_with_iam(lifetime: int = 3) -> Iterator[MotoAws]:
    """moto's server with IAM authentication on and expired STS credentials refused."""
    from moto import settings
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    before = settings.INITIAL_NO_AUTH_ACTION_COUNT
    stop = threading.Event()
    reaper = threading.Thread(target=_reap_expired, args=(stop,), name="sts-reaper", daemon=True)
    try:
        setup = {
            "endpoint_url": endpoint,
            "region_name": REGION,
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        iam = boto3.client("iam", **setup)
        iam.create_user(UserName="catalog")
        key = iam.create_access_key(UserName="catalog")["AccessKey"]
        iam.put_user_policy(
            UserName="catalog", PolicyName="all", PolicyDocument=_policy(["s3:*", "sts:*"])
        )
        trust = json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:user/catalog"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        )
        roles = {}
        for operation, role, actions in (
            ("READ", "lance-read", _READ_ACTIONS),
            ("READ_WRITE", "lance-read-write", ["s3:*"]),
        ):
            arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=trust)["Role"]["Arn"]
            iam.put_role_policy(RoleName=role, PolicyName="s3", PolicyDocument=_policy(actions))
            roles[operation] = arn
        boto3.client("s3", **setup).create_bucket(Bucket=BUCKET)
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0  # from here on, every call is authenticated
        reaper.start()
        common = {"aws_endpoint": endpoint, "aws_region": REGION, "allow_http": "true"}
        yield MotoAws(
            endpoint=endpoint,
            vendor=StsVendor(
                endpoint, key["AccessKeyId"], key["SecretAccessKey"], roles, lifetime=lifetime
            ),
            producer_options={
                **common,
                "aws_access_key_id": key["AccessKeyId"],
                "aws_secret_access_key": key["SecretAccessKey"],
            },
            client_options=common,
        )
    finally:
        stop.set()
        if reaper.is_alive():
            reaper.join(timeout=5)
        settings.INITIAL_NO_AUTH_ACTION_COUNT = before
        server.stop()
