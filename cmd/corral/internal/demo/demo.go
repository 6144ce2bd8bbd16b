package demo

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/corral-rt/corral/fault"
)

//go:generate wat2wasm wasm/stamp.wat -o wasm/stamp.wasm

// Document is the name of the deployment document within FS.
const Document = "deploy.yaml"

//go:embed deploy.yaml graph.yaml replies.yaml scripts/*.js tools/*.js wasm/stamp.wasm
var files embed.FS

// FS returns the demo's files.
func FS() fs.FS { return files }

// Extract writes the demo's files under dir, creating the directories it
// needs, and returns the path of the deployment document there.
func Extract(dir string) (string, error) {
	err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return "", fault.Wrap(fault.Internal, err, "extract demo", "into %q", dir)
	}
	return filepath.Join(dir, Document), nil
}
