"""api_token USERNAME [--name NAME] [--revoke]"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from api.services import token_create, tokens_revoke_all


class Command(BaseCommand):
    help = "Print a new API token of USERNAME (docs/api.md), or revoke all of theirs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="to tell tokens apart")
        parser.add_argument("--revoke", action="store_true", help="revoke all their tokens")

    def handle(self, *args, **options) -> None:
        model = get_user_model()
        user = model.objects.filter(**{model.USERNAME_FIELD: options["username"]}).first()
        if user is None:
            raise CommandError(f"there is no user {options['username']!r}")
        if options["revoke"]:
            count = tokens_revoke_all(user=user)
            self.stdout.write(f"{count} token(s) of {options['username']} revoked")
            return
        try:
            _row, token = token_create(user=user, name=options["name"])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        # The token alone on stdout, so that a script can read it: TOKEN=$(manage.py api_token …)
        self.stdout.write(token)
