// The theme switch in the header. The choice goes into a cookie the server reads into
// <html data-theme>, so every later page is drawn in it from its first paint; this page follows at once.
(function () {
  "use strict";

  var YEAR_SECONDS = 365 * 24 * 3600;

  document.addEventListener("change", function (event) {
    var select = event.target;
    if (!select.matches || !select.matches("[data-theme-select]")) return;
    var theme = select.value;
    var secure = location.protocol === "https:" ? "; secure" : "";
    document.cookie = "theme=" + encodeURIComponent(theme) + "; path=/; max-age=" + YEAR_SECONDS + "; samesite=lax" + secure;
    document.documentElement.setAttribute("data-theme", theme);
    var meta = document.querySelector('meta[name="color-scheme"]');
    if (meta) meta.setAttribute("content", theme === "system" ? "light dark" : theme);
  });
})();
