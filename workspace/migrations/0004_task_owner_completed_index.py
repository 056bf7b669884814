from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0003_task_completed_at"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="task",
            index=models.Index(
                fields=["owner", "-completed_at", "-id"], condition=models.Q(status="completed"), name="task_owner_completed"
            ),
        ),
    ]
