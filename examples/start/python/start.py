"""Start an s3zip archive from a Python application (boto3): by StartExecution,
or by a request dropped under requests/ in the control bucket; archive_ended,
the completion rule's Lambda target, reads the execution's output
(docs/output.md). Names come from the environment: the stack's outputs
StateMachineArn and ControlBucketName, and your buckets."""
import json
import os

import boto3


def new_request(request_id: str, source_bucket: str, destination_bucket: str) -> str:
    """The execution's input (docs/contract.md, "Request")."""
    return json.dumps({
        "id": request_id,
        "source": {"bucket": source_bucket, "prefix": "2024/"},
        "destination": {"bucket": destination_bucket, "key": "zips/photos-2024.zip"},
        "options": {"strategy": "auto"},
    })


def start(request: str) -> None:
    if os.environ.get("CONTROL_BUCKET"):  # the control-bucket drop
        boto3.client("s3").put_object(Bucket=os.environ["CONTROL_BUCKET"], Key="requests/order-42.json", Body=request.encode())
    else:
        run = boto3.client("stepfunctions").start_execution(stateMachineArn=os.environ["STATE_MACHINE_ARN"], input=request)
        print(run["executionArn"])


def archive_ended(event: dict, context: object = None) -> None:
    """The completion rule's Lambda target."""
    detail = event["detail"]
    if detail["status"] != "SUCCEEDED":
        print(f"{detail['name']} {detail['status']}: {detail.get('error')}: {detail.get('cause')}")
        return
    out = json.loads(detail["output"])  # docs/output.md
    if out["version"] != 1:
        raise ValueError(f"output version {out['version']}: this code reads version 1")
    print(f"{out['requestId']}: {out['archive']['uri']}, {out['archive']['size']} bytes, CRC-32 {out['archive']['crc32']}")


if __name__ == "__main__":
    start(new_request("order-42", os.environ["SOURCE_BUCKET"], os.environ["DESTINATION_BUCKET"]))
