from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs.models import Job


def named(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def upload(client, name: str, data: bytes, *, htmx: bool = False, **fields):
    return client.post(
        reverse("bundle_upload", args=["demo"]),
        {"bundle": named(name, data), **fields},
        **({"HTTP_HX_REQUEST": "true"} if htmx else {}),
    )


def job_url(job: Job) -> str:
    return reverse("job_detail", args=[job.project.slug, job.code])


def the_job() -> Job:
    return Job.objects.select_related("project").get()
