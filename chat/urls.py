from django.urls import path

from chat import question_views, views

app_name = "chat"
urlpatterns = [
    path("", views.home, name="home"),
    path("new/", views.new_conversation, name="new"),
    path("search/", views.search, name="search"),
    path("<uuid:conversation_id>/", views.conversation_page, name="conversation"),
    path("<uuid:conversation_id>/earlier/<int:before>/", views.earlier_messages, name="earlier"),
    path("<uuid:conversation_id>/earlier/<int:before>/through/<int:through>/", views.earlier_messages, name="earlier_through"),
    path("<uuid:conversation_id>/rename/", views.rename, name="rename"),
    path("<uuid:conversation_id>/delete/", views.delete, name="delete"),
    path("<uuid:conversation_id>/pin/", views.pin, name="pin"),
    path("<uuid:conversation_id>/export/", views.export, name="export"),
    path("questions/<uuid:question_id>/answer/", question_views.answer, name="question_answer"),
    path("questions/<uuid:question_id>/pause/", question_views.pause, name="question_pause"),
    path("questions/<uuid:question_id>/resume/", question_views.resume, name="question_resume"),
    path("questions/<uuid:question_id>/expire/", question_views.expire, name="question_expire"),
]
