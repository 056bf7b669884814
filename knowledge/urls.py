from django.urls import path

from knowledge import api, views

app_name = "knowledge"
urlpatterns = [
    path("kb/sources/<int:pk>/", views.source_page, name="source"),
    path("kb/shared/<str:token>/", views.shared_source_page, name="shared_source"),
    path("api/v1/reply", api.reply, name="api_reply"),
    path("metrics", views.metrics, name="metrics"),
]
