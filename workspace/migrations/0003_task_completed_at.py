from django.db import migrations, models
from django.db.models import F


def completed_when_last_changed(apps, schema_editor):
    """Tasks completed before completion times were kept: their last change is the best guess."""
    Task = apps.get_model("workspace", "Task")
    Task.objects.filter(status="completed").update(completed_at=F("updated_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0002_owner_leading_search_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="completed_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(completed_when_last_changed, migrations.RunPython.noop),
    ]
