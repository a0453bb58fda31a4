#ifndef TFM_VERSION_H
#define TFM_VERSION_H
#define TFM_VERSION "0.1.0"
#endif
