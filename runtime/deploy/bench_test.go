package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/runtime/deploy"
)

func BenchmarkParse(b *testing.B) {
	full, err := os.ReadFile(filepath.Join(testdataDir, "full.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		data []byte
	}{{"yaml", []byte(yamlDoc)}, {"json", []byte(jsonDoc)}, {"full", full}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				if _, err := deploy.Parse(bc.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDeploy(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(testdataDir, "full.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	doc, err := deploy.ParseWithConfig(data, deploy.ParseConfig{BaseDir: testdataDir})
	if err != nil {
		b.Fatal(err)
	}
	opts := goldenOptions(&journal{})
	b.ReportAllocs()
	for b.Loop() {
		res, err := deploy.Deploy(context.Background(), doc, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := res.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
