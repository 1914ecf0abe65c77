"""Check the Label Studio review loop against a real Label Studio server, through its REST API (standard library
only; no SDK): create a project with the labelling configuration of ``export-flagged --format label-studio``,
import its tasks, check that their predictions fill every required control of the configuration, post reviewers'
answers from a CSV (one or several reviewers per task), and save the tasks as the server lists them
(``imported_tasks.json``), the project's JSON and JSON-MIN exports and a snapshot export in both formats (the test fixtures under tests/data/label_studio/ were made so; docs/api.md lists
the versions and steps).

    corpus-audit export-flagged demo-out --format label-studio --top 20 -o tasks.json
    python scripts/label_studio_roundtrip.py --url http://localhost:8089 --token PAT_1 --token PAT_2 \\
        --tasks tasks.json --labels labels.csv -o exports/

``--labels``: ``rank,category,stigmatising,dimension,stigma_strength,note,cancelled`` and optionally
``reviewer`` (``rank``: the task's ``data.rank``; ``dimension``: names joined with ``;``; an empty
``stigmatising`` posts an answer without that choice; ``cancelled`` = yes posts a skipped task; ``reviewer``: which
``--token`` answers, 1 for the first, the default). Each token is a reviewer's personal access token (Label Studio
>= 1.23: Account & Settings -> Personal Access Token), exchanged for an access token at ``/api/token/refresh``;
legacy tokens are off in 1.23 unless the server starts with ``--enable-legacy-api-token``.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
import urllib.request
from pathlib import Path
from typing import Any
from xml.etree import ElementTree


class LabelStudio:
    def __init__(self, url: str, personal_token: str) -> None:
        self.url = url.rstrip("/")
        self.access = self.call("POST", "/api/token/refresh", {"refresh": personal_token}, auth=False)["access"]

    def call(self, method: str, path: str, body: Any = None, auth: bool = True, raw: bool = False) -> Any:
        request = urllib.request.Request(self.url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode("utf-8"),
                                         headers={"Content-Type": "application/json",
                                                  **({"Authorization": f"Bearer {self.access}"} if auth else {})})
        with urllib.request.urlopen(request, timeout=120) as response:
            payload = response.read()
        return payload if raw else json.loads(payload or b"null")


def answer(row: dict[str, str]) -> list[dict[str, Any]]:
    result = []
    for name in ("category", "stigmatising", "dimension", "stigma_strength"):
        if row[name]:
            result.append({"from_name": name, "to_name": "text", "type": "choices",
                           "value": {"choices": row[name].split(";")}})
    if row["note"]:
        result.append({"from_name": "note", "to_name": "text", "type": "textarea", "value": {"text": [row["note"]]}})
    return result


def required_controls(config: str) -> set[str]:
    """The names of the controls the configuration requires."""
    return {node.get("name") for node in ElementTree.fromstring(config).iter()
            if node.get("required") == "true" and node.get("name")}


def check_predictions(studio: LabelStudio, project: int, config: str) -> list[dict[str, Any]]:
    """Say how many imported tasks have a prediction that fills every required control; return the tasks as the
    server lists them (id, data, predictions)."""
    required = required_controls(config)
    listed = studio.call("GET", f"/api/tasks?project={project}&page_size=100000&fields=all")["tasks"]
    filled = sum(1 for task in listed if task.get("predictions") and required <= {
        item["from_name"] for item in task["predictions"][0]["result"]})
    print(f"{filled} of {len(listed)} imported task(s) have a prediction filling every required control "
          f"({', '.join(sorted(required))})")
    return [{"id": task["id"], "data": task["data"],
             "predictions": [{key: prediction[key] for key in ("result", "score", "model_version")}
                             for prediction in task["predictions"]]} for task in listed]


def snapshot(studio: LabelStudio, project: int, output: Path) -> None:
    """Create a snapshot export of the project and download it as JSON and JSON-MIN."""
    created = studio.call("POST", f"/api/projects/{project}/exports", {})
    for _ in range(60):
        if studio.call("GET", f"/api/projects/{project}/exports/{created['id']}")["status"] == "completed":
            break
        time.sleep(1)
    for export_type, name in (("JSON", "snapshot.json"), ("JSON_MIN", "snapshot_min.json")):
        payload = studio.call("GET", f"/api/projects/{project}/exports/{created['id']}/download"
                                     f"?exportType={export_type}", raw=True)
        (output / name).write_bytes(payload)
        print(f"wrote {output / name} ({len(json.loads(payload))} record(s))")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://localhost:8080")
    parser.add_argument("--token", required=True, action="append", help="a reviewer's personal access token; "
                        "repeat for more reviewers (the first creates the project)")
    parser.add_argument("--tasks", type=Path, required=True, help="the import file of export-flagged")
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--title", default="corpus-audit review")
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder for the exports")
    args = parser.parse_args()
    reviewers = [LabelStudio(args.url, token) for token in args.token]
    studio = reviewers[0]
    config = args.tasks.with_name(args.tasks.stem + ".label_config.xml").read_text(encoding="utf-8")
    project = studio.call("POST", "/api/projects", {"title": args.title, "label_config": config})
    tasks = json.loads(args.tasks.read_text(encoding="utf-8"))
    imported = studio.call("POST", f"/api/projects/{project['id']}/import", tasks)
    print(f"project {project['id']}: imported {imported.get('task_count')} task(s), "
          f"{imported.get('prediction_count')} prediction(s)")
    listed = check_predictions(studio, project["id"], config)
    by_rank = {task["data"]["rank"]: task["id"] for task in listed}
    with open(args.labels, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            reviewer = reviewers[int(row.get("reviewer") or 1) - 1]
            reviewer.call("POST", f"/api/tasks/{by_rank[int(row['rank'])]}/annotations",
                          {"result": [] if row["cancelled"] == "yes" else answer(row),
                           "was_cancelled": row["cancelled"] == "yes"})
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "imported_tasks.json").write_text(json.dumps(listed, indent=1, ensure_ascii=False),
                                                     encoding="utf-8")
    for export_type, name in (("JSON", "export.json"), ("JSON_MIN", "export_min.json")):
        payload = studio.call("GET", f"/api/projects/{project['id']}/export?exportType={export_type}", raw=True)
        (args.output / name).write_bytes(payload)
        print(f"wrote {args.output / name} ({len(json.loads(payload))} record(s))")
    snapshot(studio, project["id"], args.output)
    version = studio.call("GET", "/api/version")
    print(f"Label Studio {version.get('release', version)}")


if __name__ == "__main__":
    main()
