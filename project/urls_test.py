"""URLs of the test settings: the app's, plus the test servers' idle check (project/testing.py)."""

from django.urls import path

from project import testing
from project.urls import urlpatterns as app_urlpatterns

urlpatterns = [*app_urlpatterns, path(testing.IDLE_PATH.strip("/") + "/", testing.idle, name="test-idle")]
