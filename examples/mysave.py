"""Upload each file the trainer writes to S3: a transfer hook you write yourself.

Copy this file into the directory you start training from, then::

    export MY_BUCKET=my-bucket MY_PREFIX=runs    # MY_PREFIX is optional
    python -m trainer train ... --remote True --remote-transfer-cmd mysave.save_to_s3
    python run_visualizer_local.py --pickle_dir s3://my-bucket/runs/exp1/pickle

Credentials, region and endpoint come from boto3's usual settings
(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, AWS_DEFAULT_REGION,
AWS_ENDPOINT_URL). The built-in ``transfer_plugins.s3.save_to_s3`` does the same
and also skips unchanged files, verifies checksums and checks the bucket before
training starts.
"""

import os
from pathlib import Path, PurePosixPath

import boto3

# Created once, at import: a client is safe to use from many threads, creating one is not.
s3 = boto3.client("s3")


def save_to_s3(source_path: str) -> None:
    """Upload one file as ``<prefix>/<name>/pickle/<file>`` (or ``<prefix>/<name>/<checkpoint>``)."""
    path = Path(source_path)
    tail = path.parts[-3:] if path.parent.name == "pickle" else path.parts[-2:]
    key = PurePosixPath(os.environ.get("MY_PREFIX", ""), *tail).as_posix()
    s3.upload_file(str(path), os.environ["MY_BUCKET"], key)
