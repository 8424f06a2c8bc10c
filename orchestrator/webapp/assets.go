package webapp

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// static holds the app's stylesheet, its script and htmx (static/vendor, pinned, with its licence).
//
//go:embed static
var static embed.FS

// assetPrefix is where assets are served, each under a name holding its content's hash, so a
// browser may keep it for a year and a new build is fetched at once.
const assetPrefix = "/assets/"

// asset is one embedded file as served.
type asset struct {
	body  []byte
	ctype string
}

// assets maps the served names (app.3f2a1b9c0d.css) to the files, and hashed maps the files'
// own names (app.css) to the served ones.
var assets, hashed = loadAssets()

// loadAssets reads static and names each file by its content's hash.
func loadAssets() (map[string]asset, map[string]string) {
	byServed, byName := map[string]asset{}, map[string]string{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "static/")
		sum := sha256.Sum256(b)
		ext := path.Ext(name)
		served := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext
		ctype := mime.TypeByExtension(ext)
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		byServed[served] = asset{body: b, ctype: ctype}
		byName[name] = assetPrefix + served
		return nil
	})
	if err != nil {
		panic("webapp: read the embedded assets: " + err.Error())
	}
	return byServed, byName
}

// assetURL is the served URL of an embedded file, by its own name.
func assetURL(name string) string {
	u, ok := hashed[name]
	if !ok {
		panic("webapp: no embedded asset " + name)
	}
	return u
}

// serveAsset answers an asset by its hashed name, cached for a year; any other name is a 404.
func serveAsset(c *fiber.Ctx) error {
	a, ok := assets[strings.TrimPrefix(c.Path(), assetPrefix)]
	if !ok {
		return c.Status(fiber.StatusNotFound).SendString("no such asset")
	}
	c.Set(fiber.HeaderContentType, a.ctype)
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Send(a.body)
}
