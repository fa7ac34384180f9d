package dist

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"io"
	"os"
	"time"
)

// file is one archive entry.
type file struct {
	name string
	data []byte
	mode os.FileMode
}

// writeTarGz writes files (in their order) as a gzipped tar: regular
// files at the root, owned by 0:0 with no names, dated modTime, in the
// USTAR format; the gzip header carries no name and no time.
func writeTarGz(w io.Writer, files []file, modTime time.Time) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Size: int64(len(f.data)), Mode: int64(f.mode.Perm()),
			ModTime: modTime.UTC().Truncate(time.Second), Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// writeZip writes files (in their order) as a zip, deflated, each dated
// modTime with its Unix mode recorded (an unzip on macOS or Linux keeps
// the executable bit).
func writeZip(w io.Writer, files []file, modTime time.Time) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestCompression)
	})
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: modTime.UTC().Truncate(2 * time.Second)}
		h.SetMode(f.mode.Perm())
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.data); err != nil {
			return err
		}
	}
	return zw.Close()
}
