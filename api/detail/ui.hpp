#pragma once
/// The web dashboard (docs/dashboard.md): its files, from api/ui/, are embedded in the binary at
/// build time (api/embed_ui.cmake) and served at /ui/ — no file is read at run time. They are
/// static and public (the page asks for the API key and calls the public API with it).

#include <span>
#include <string_view>

#include "api/detail/stream.hpp"

namespace sy::api::detail {

struct ui_asset {
  std::string_view name;          ///< its file name in api/ui/ ("index.html", "app.js", ...)
  std::string_view content_type;  ///< from its extension
  std::string_view body;
};

/// Every embedded file, by name (the generated source defines it).
std::span<const ui_asset> ui_assets();

/// `GET /ui/<name>` (`name` empty: index.html): the file with its content type, no caching
/// between builds (`Cache-Control: no-cache`), and a content security policy that allows only
/// the engine's own origin; `404 not_found` for a name that is not embedded.
response ui_file(std::string_view name, const request& req);

/// `GET /ui`: `308` to `/ui/` (the page's relative asset URLs need the slash).
response ui_redirect(const request& req);

}  // namespace sy::api::detail
