from django.db import migrations

from evidence.dbguards import AppendOnly, RunVendorSQL

# A claim's chain numbers its claim and verdict revisions together; each table's
# unique (claim, seq) cannot see the other table, so a trigger checks across.
PG_SEQ_FREE = """
CREATE OR REPLACE FUNCTION cards_chain_seq_free() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM cards_claimrevision WHERE claim_id = NEW.claim_id AND seq = NEW.seq)
       OR EXISTS (SELECT 1 FROM cards_verdictrevision WHERE claim_id = NEW.claim_id AND seq = NEW.seq)
    THEN
        RAISE EXCEPTION 'claim % already has a revision numbered %', NEW.claim_id, NEW.seq
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NEW;
END
$$
"""


def sqlite_seq_free(table: str, other: str) -> str:
    return (
        f"CREATE TRIGGER {table}_seq_free BEFORE INSERT ON {table} "
        f"WHEN EXISTS (SELECT 1 FROM {other} WHERE claim_id = NEW.claim_id AND seq = NEW.seq) "
        "BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: claim chain seq is taken'); END"
    )


SEQ_GUARD = RunVendorSQL(
    forwards={
        "postgresql": [
            PG_SEQ_FREE,
            *(
                f"CREATE TRIGGER {t}_seq_free BEFORE INSERT ON {t} "
                "FOR EACH ROW EXECUTE FUNCTION cards_chain_seq_free()"
                for t in ("cards_claimrevision", "cards_verdictrevision")
            ),
        ],
        "sqlite": [
            sqlite_seq_free("cards_claimrevision", "cards_verdictrevision"),
            sqlite_seq_free("cards_verdictrevision", "cards_claimrevision"),
        ],
    },
    backwards={
        "postgresql": [
            "DROP TRIGGER IF EXISTS cards_claimrevision_seq_free ON cards_claimrevision",
            "DROP TRIGGER IF EXISTS cards_verdictrevision_seq_free ON cards_verdictrevision",
        ],
        "sqlite": [
            "DROP TRIGGER IF EXISTS cards_claimrevision_seq_free",
            "DROP TRIGGER IF EXISTS cards_verdictrevision_seq_free",
        ],
    },
)


class Migration(migrations.Migration):
    dependencies = [("cards", "0001_initial"), ("replay", "0002_append_only")]

    operations = [AppendOnly("cards_claim", "cards_claimrevision", "cards_verdictrevision", "cards_responsereview"), SEQ_GUARD]
