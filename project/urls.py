from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

# The admin's pages say whose admin they are, in their header and in the browser's tab.
admin.site.site_header = "Clarion administration"
admin.site.site_title = "Clarion admin"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="chat:home", permanent=False), name="root"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password/changed/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("chat/", include("chat.urls")),
    # Knowledge base: source pages (/kb/sources/<pk>/), the adapter API (/api/v1/reply), /metrics.
    path("", include("knowledge.urls")),
    path("admin/", admin.site.urls),
]
