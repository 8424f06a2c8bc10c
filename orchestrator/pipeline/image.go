package pipeline

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
)

// minImageWidth is the narrowest picture CapJPEG makes: a smaller one says nothing.
const minImageWidth = 160

// CapJPEG fits a JPEG within limit bytes: one that fits is kept as it is; a larger one is encoded
// again at half its width and height (quality 70) until it fits. It returns the JPEG and a note
// saying what was done ("" when nothing), or an error when the data is no JPEG or it cannot fit
// above minImageWidth pixels.
func CapJPEG(data []byte, limit int) ([]byte, string, error) {
	if limit <= 0 {
		limit = DefaultCap
	}
	if len(data) <= limit {
		return data, "", nil
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("the image is not a JPEG: %w", err)
	}
	from := img.Bounds().Size()
	for img.Bounds().Dx()/2 >= minImageWidth {
		img = halve(img)
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 70}); err != nil {
			return nil, "", fmt.Errorf("encode the smaller image: %w", err)
		}
		if b.Len() <= limit {
			to := img.Bounds().Size()
			return b.Bytes(), fmt.Sprintf("[the %dx%d image (%d bytes) passed the %d-byte result cap: it is shown at %dx%d]",
				from.X, from.Y, len(data), limit, to.X, to.Y), nil
		}
	}
	return nil, "", fmt.Errorf("the %dx%d image (%d bytes) does not fit the %d-byte result cap even at %d pixels wide", from.X, from.Y, len(data), limit, minImageWidth)
}

// halve scales img to half its width and height, each pixel the mean of the four it replaces.
func halve(img image.Image) image.Image {
	b := img.Bounds()
	w, h := b.Dx()/2, b.Dy()/2
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var r, g, bl uint32
			for _, d := range [4][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				cr, cg, cb, _ := img.At(b.Min.X+2*x+d[0], b.Min.Y+2*y+d[1]).RGBA()
				r, g, bl = r+cr, g+cg, bl+cb
			}
			i := out.PixOffset(x, y)
			out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = uint8(r>>10), uint8(g>>10), uint8(bl>>10), 0xff
		}
	}
	return out
}
