from django.urls import path

from chat import views

app_name = "chat"
urlpatterns = [
    path("", views.home, name="home"),
    path("new/", views.new_conversation, name="new"),
    path("<uuid:conversation_id>/", views.conversation_page, name="conversation"),
]
